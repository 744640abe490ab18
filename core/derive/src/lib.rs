//! # fairpipe-derive
//!
//! `#[derive(FigureNames)]`: a stage kind's figures struct (the `*Figures` struct serialized into
//! its entry of `summary.json`) describes its figures once. The derive implements
//! `fairpipe_data::figures::FigureNames` (re-exported by the engine as
//! `fairpipe_core::stage::kind::FigureNames`), the top-level names serde writes, in field order,
//! each with its shape, read from the struct's fields and the serde attributes that change a name
//! or its presence:
//!
//! - `#[serde(rename = "NAME")]` (or `rename(serialize = "NAME")`): the field is written `NAME`;
//! - `#[serde(skip)]`, `#[serde(skip_serializing)]`: the field is not written;
//! - `#[serde(flatten)]` on a struct: its names, through its own `FigureNames`, in its place;
//! - `#[serde(flatten)]` on a map (`Map`, `BTreeMap`, `HashMap`, `IndexMap`): the kind is *open*
//!   (a plugin may add names of its own).
//!
//! `default`, `deserialize_with` and `skip_serializing_if` do not change what a name is and are
//! read past. Any other serde attribute, on the struct or a field, is a compile error naming it,
//! rather than a silently wrong list.
//!
//! A field's shape comes from its type, an `Option` looked through: a number or `bool` is a
//! number, `String`/`str` text, `Vec`, a set, an array or a tuple a list, anything else (a struct,
//! a map, `serde_json::Value`) an object.
//!
//! `#[derive(StageKeys)]` describes a stage kind's keys once, in its config type (see the `keys`
//! module: names from serde, descriptions from the `///` comments, types from `KeyType`, defaults
//! from what serde fills in); `#[derive(KeyType)]` gives an enum of choices its type text.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, GenericArgument, LitStr, PathArguments, Type};

mod keys;

/// Implements `fairpipe_data::figures::FigureNames` for a struct with named fields (see the
/// crate's documentation for the serde attributes it reads).
#[proc_macro_derive(FigureNames, attributes(serde))]
pub fn derive_figure_names(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// Implements `fairpipe_keys::StageKeys` for a stage kind's config struct (its keys,
/// each named by serde, described by its `///` comment, typed by `KeyType` and defaulted as serde
/// defaults it) or for the tagged enum a `+tag` field holds (its variants' keys, each key marked
/// with the variants it belongs to). See the crate's documentation.
#[proc_macro_derive(StageKeys, attributes(serde, key))]
pub fn derive_stage_keys(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    keys::expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// Implements `fairpipe_keys::KeyType` for an enum of choices read by serde: its type
/// text is its variants' serde names, `"a"|"b"`.
#[proc_macro_derive(KeyType)]
pub fn derive_key_type(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics ::fairpipe_keys::KeyType for #ident #ty_generics #where_clause {
            fn text() -> ::std::string::String {
                ::fairpipe_keys::choices::<Self>()
            }
        }
    }
    .into()
}

/// The serde attributes the derive reads past: they change neither a field's name nor whether it
/// is written.
const NEUTRAL: &[&str] = &["default", "deserialize_with", "skip_serializing_if"];

/// What a field's serde attributes say about its name.
#[derive(Default)]
struct FieldAttrs {
    rename: Option<LitStr>,
    skip: bool,
    flatten: bool,
}

/// A serde attribute the derive does not read, as an error at its span.
fn not_understood(meta: &syn::meta::ParseNestedMeta<'_>, on: &str) -> syn::Error {
    let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_else(|| "?".into());
    meta.error(format!(
        "#[derive(FigureNames)] does not understand `#[serde({name})]` on {on}: it reads rename, skip, skip_serializing and \
         flatten on a field, and passes over {}; teach it what `{name}` does to the names summary.json gets",
        NEUTRAL.join(", ")
    ))
}

/// Skip an attribute's value (`= "…"`) if it has one.
pub(crate) fn skip_value(meta: &syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    }
    Ok(())
}

/// The name a `#[serde(rename = "NAME")]` or `#[serde(rename(serialize = "…", deserialize =
/// "…"))]` gives for `side` (`serialize` or `deserialize`), if it gives one.
pub(crate) fn renamed(meta: &syn::meta::ParseNestedMeta<'_>, side: &str) -> syn::Result<Option<LitStr>> {
    if meta.input.peek(syn::Token![=]) {
        return Ok(Some(meta.value()?.parse()?));
    }
    let mut name = None;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident("serialize") || inner.path.is_ident("deserialize") {
            let lit: LitStr = inner.value()?.parse()?;
            if inner.path.is_ident(side) {
                name = Some(lit);
            }
            Ok(())
        } else {
            Err(inner.error("expected `serialize = \"…\"` or `deserialize = \"…\"`"))
        }
    })?;
    Ok(name)
}

/// Read one field's `#[serde(...)]` attributes.
fn field_attrs(field: &syn::Field) -> syn::Result<FieldAttrs> {
    let mut out = FieldAttrs::default();
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                out.rename = renamed(&meta, "serialize")?.or(out.rename.take());
            } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_serializing") {
                out.skip = true;
            } else if meta.path.is_ident("flatten") {
                out.flatten = true;
            } else if NEUTRAL.iter().any(|n| meta.path.is_ident(n)) {
                skip_value(&meta)?;
            } else {
                return Err(not_understood(&meta, "a field"));
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// The last segment of a type path and its generic arguments, if the type is a path.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

/// The type inside `Option<…>`, if `ty` is one.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    let segment = last_segment(ty).filter(|s| s.ident == "Option")?;
    let PathArguments::AngleBracketed(args) = &segment.arguments else { return None };
    match args.args.first() {
        Some(GenericArgument::Type(inner)) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}

/// The shape a value of `ty` takes in summary.json: `Number`, `Text`, `List` or `Object`.
fn shape(ty: &Type) -> &'static str {
    if let Some(inner) = option_inner(ty) {
        return shape(inner);
    }
    match ty {
        Type::Reference(r) => shape(&r.elem),
        Type::Group(g) => shape(&g.elem),
        Type::Paren(p) => shape(&p.elem),
        Type::Array(_) | Type::Slice(_) | Type::Tuple(_) => "List",
        _ => match last_segment(ty).map(|s| s.ident.to_string()).as_deref() {
            Some(
                "f64" | "f32" | "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "bool",
            ) => "Number",
            Some("String" | "str") => "Text",
            Some("Vec" | "VecDeque" | "BTreeSet" | "HashSet") => "List",
            _ => "Object",
        },
    }
}

/// Whether `ty` is a map (a flattened one lets a plugin add names).
fn is_map(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| ["Map", "BTreeMap", "HashMap", "IndexMap"].iter().any(|m| s.ident == m))
}

/// The `FigureNames` impl for `input`, or the error at the span of what it does not understand.
fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            // On the struct, only what changes no serialized name.
            if meta.path.is_ident("default") || meta.path.is_ident("deny_unknown_fields") {
                skip_value(&meta)
            } else {
                Err(not_understood(&meta, "the struct"))
            }
        })?;
    }
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(&input.ident, "#[derive(FigureNames)] is for a figures struct with named fields"));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(&input.ident, "#[derive(FigureNames)] is for a figures struct with named fields"));
    };
    let kind = quote!(::fairpipe_data::figures);
    let (mut pushes, mut open) = (Vec::new(), Vec::new());
    for field in &fields.named {
        let attrs = field_attrs(field)?;
        let ty = &field.ty;
        if attrs.skip {
            continue;
        }
        if attrs.flatten {
            if attrs.rename.is_some() {
                return Err(syn::Error::new_spanned(field, "#[serde(rename)] on a flattened field renames nothing"));
            }
            if is_map(ty) {
                open.push(quote!(true));
            } else {
                pushes.push(quote!(names.extend(<#ty as #kind::FigureNames>::figure_names());));
                open.push(quote!(<#ty as #kind::FigureNames>::OPEN));
            }
            continue;
        }
        let name = match &attrs.rename {
            Some(lit) => lit.value(),
            None => field.ident.as_ref().expect("named fields have names").to_string().trim_start_matches("r#").to_string(),
        };
        let shape = syn::Ident::new(shape(ty), proc_macro2::Span::call_site());
        pushes.push(quote!(names.push(#kind::FigureName { name: #name, shape: #kind::Shape::#shape });));
    }
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics #kind::FigureNames for #ident #ty_generics #where_clause {
            const OPEN: bool = false #(|| #open)*;
            fn figure_names() -> ::std::vec::Vec<#kind::FigureName> {
                let mut names = ::std::vec::Vec::new();
                #(#pushes)*
                names
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What derive `expand` makes of the type in `source`: the code, or the error.
    pub(crate) fn expanded_by(expand: fn(&DeriveInput) -> syn::Result<TokenStream2>, source: &str) -> Result<String, String> {
        let input: DeriveInput = syn::parse_str(source).expect("a type");
        expand(&input).map(|t| t.to_string()).map_err(|e| e.to_string())
    }

    fn expanded(source: &str) -> Result<String, String> {
        expanded_by(expand, source)
    }

    #[test]
    fn a_serde_attribute_it_does_not_read_is_an_error_naming_it() {
        let e = expanded("struct F { #[serde(serialize_with = \"f\")] a: f64 }").unwrap_err();
        assert!(e.contains("does not understand `#[serde(serialize_with)]` on a field"), "{e}");
        let e = expanded("#[serde(rename_all = \"camelCase\")] struct F { a: f64 }").unwrap_err();
        assert!(e.contains("does not understand `#[serde(rename_all)]` on the struct"), "{e}");
        let e = expanded("struct F { #[serde(default, alias = \"b\")] a: f64 }").unwrap_err();
        assert!(e.contains("`#[serde(alias)]`"), "{e}");
        let e = expanded("enum F { A }").unwrap_err();
        assert!(e.contains("named fields"), "{e}");
    }

    #[test]
    fn the_attributes_that_change_no_name_are_read_past() {
        let ok = expanded(
            "#[serde(deny_unknown_fields, default)] struct F { #[serde(default, deserialize_with = \"d\", skip_serializing_if = \"Option::is_none\")] a: Option<f64> }",
        )
        .unwrap();
        assert!(ok.contains("name : \"a\"") && ok.contains("Shape :: Number"), "{ok}");
    }

    #[test]
    fn shapes_follow_the_types() {
        let ty = |s: &str| shape(&syn::parse_str::<Type>(s).unwrap());
        for (t, want) in [
            ("f64", "Number"),
            ("Option<usize>", "Number"),
            ("bool", "Number"),
            ("std::string::String", "Text"),
            ("Option<String>", "Text"),
            ("&'static str", "Text"),
            ("[f64; 2]", "List"),
            ("Vec<(f64, usize)>", "List"),
            ("Option<Vec<String>>", "List"),
            ("(f64, f64)", "List"),
            ("BTreeMap<String, usize>", "Object"),
            ("serde_json::Value", "Object"),
            ("Option<Agreement>", "Object"),
        ] {
            assert_eq!(ty(t), want, "{t}");
        }
    }
}
