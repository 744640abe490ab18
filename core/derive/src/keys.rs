//! `#[derive(StageKeys)]`: a stage kind's keys described once, by its config type.
//!
//! On a struct with named fields, each field is one key:
//!
//! - its name is the name serde reads (`#[serde(rename = "NAME")]`, or `rename(deserialize =
//!   "NAME")`); a field serde does not read (`skip`, `skip_deserializing`) is no key;
//! - its description is the field's `///` comment, its lines joined, without the final period and
//!   with the first letter lower-cased (unless it starts an acronym), as the reference prints it;
//! - its type text is the field type's `KeyType::text()`, or `#[key(ty = "…")]`;
//! - its default is what serde fills in when the key is absent, serialized as TOML: the field's
//!   `#[serde(default)]` (`Default` of its type) or `#[serde(default = "path")]`, the struct's
//!   `#[serde(default)]` (`Default` of the struct), `none` for an `Option` without one, `required`
//!   otherwise; `#[key(default = "…")]` says it in words instead where the value is not what a
//!   user should read.
//!
//! A field named `+TAG` (the engine's tagged enum, `crate::stage::config_de`) gives the key `TAG`,
//! whose values are the enum's variants (the first when absent), then the keys of every variant,
//! each marked with the variants it belongs to; a field named `*NAME` gives the keys of the struct
//! it holds in its place.
//!
//! A field marked `#[key(nested)]` holds a table read by a config type of its own (an `Option` of
//! it, or it), which derives `StageKeys` too: the key lists that type's keys after it
//! (`KeyDoc::holding`), as `load_model`'s `llm = { … }` lists `llm.base_url` and the rest.
//!
//! A key several kinds share is described once, as a `KeyDoc` constant the field names with
//! `#[key(shared = PATH)]` (its type text, default and description; the name is serde's).
//!
//! On an enum (the one a `+TAG` field holds), each variant holds one struct of keys; the derive
//! gives their keys, each once, with the (serde) names of the variants that have it.
//!
//! Any other serde attribute (one that could change which keys are read) is a compile error.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{Data, DeriveInput, Fields, LitStr, Type};

use crate::{option_inner, renamed, skip_value};

/// What a field's serde and `key` attributes say about its key.
#[derive(Default)]
struct KeyAttrs {
    rename: Option<LitStr>,
    skip: bool,
    default: Option<Option<syn::ExprPath>>,
    ty: Option<LitStr>,
    default_text: Option<LitStr>,
    shared: Option<syn::ExprPath>,
    nested: bool,
}

/// A serde attribute the derive does not read, as an error at its span.
fn not_understood(meta: &syn::meta::ParseNestedMeta<'_>, on: &str, reads: &str) -> syn::Error {
    let name = meta.path.get_ident().map(ToString::to_string).unwrap_or_else(|| "?".into());
    meta.error(format!(
        "#[derive(StageKeys)] does not understand `#[serde({name})]` on {on}: it reads {reads}; teach it what `{name}` does to the keys a stage reads"
    ))
}

/// Read one field's `#[serde(...)]` and `#[key(...)]` attributes.
fn key_attrs(field: &syn::Field) -> syn::Result<KeyAttrs> {
    let mut out = KeyAttrs::default();
    for attr in &field.attrs {
        if attr.path().is_ident("serde") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("rename") {
                    out.rename = renamed(&meta, "deserialize")?.or(out.rename.take());
                } else if meta.path.is_ident("skip") || meta.path.is_ident("skip_deserializing") {
                    out.skip = true;
                } else if meta.path.is_ident("default") {
                    out.default = Some(if meta.input.peek(syn::Token![=]) {
                        let path: LitStr = meta.value()?.parse()?;
                        Some(path.parse()?)
                    } else {
                        None
                    });
                } else if ["deserialize_with", "skip_serializing_if", "skip_serializing", "serialize_with"].iter().any(|n| meta.path.is_ident(n)) {
                    skip_value(&meta)?;
                } else {
                    return Err(not_understood(
                        &meta,
                        "a field",
                        "rename, default, skip and skip_deserializing, and passes over deserialize_with, serialize_with, skip_serializing and skip_serializing_if",
                    ));
                }
                Ok(())
            })?;
        } else if attr.path().is_ident("key") {
            attr.parse_nested_meta(|meta| {
                if meta.path.is_ident("ty") {
                    out.ty = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("default") {
                    out.default_text = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("shared") {
                    out.shared = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident("nested") {
                    out.nested = true;
                } else {
                    return Err(meta.error("#[key(...)] takes `ty = \"…\"`, `default = \"…\"`, `shared = PATH` and `nested`"));
                }
                Ok(())
            })?;
        }
    }
    Ok(out)
}

/// The text of the `///` comment on `attrs`, its lines joined and trimmed.
fn doc_text(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value {
                lines.push(s.value().trim().to_string());
            }
        }
    }
    lines.retain(|l| !l.is_empty());
    lines.join(" ")
}

/// A field comment as the reference prints a key's description: without the final period, the
/// first letter lower-cased unless the first word has capitals or digits after it ("SVM", "L-BFGS",
/// "L2", "TestSGD").
pub(crate) fn key_doc(comment: &str) -> String {
    let text = comment.strip_suffix('.').unwrap_or(comment);
    let first_word = text.split_whitespace().next().unwrap_or("");
    let keep = first_word.chars().skip(1).any(|c| c.is_uppercase() || c.is_ascii_digit());
    let mut chars = text.chars();
    match chars.next() {
        Some(c) if !keep => c.to_lowercase().chain(chars).collect(),
        _ => text.to_string(),
    }
}

/// The `StageKeys` impl for `input`, or the error at the span of what it does not understand.
pub(crate) fn expand(input: &DeriveInput) -> syn::Result<TokenStream2> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(&input.generics, "#[derive(StageKeys)] is for a config type without generics"));
    }
    let body = match &input.data {
        Data::Struct(data) => struct_keys(input, data)?,
        Data::Enum(data) => enum_keys(input, data)?,
        Data::Union(_) => {
            return Err(syn::Error::new_spanned(&input.ident, "#[derive(StageKeys)] is for a config struct or a tagged enum"))
        }
    };
    let keys = quote!(::fairpipe_keys);
    let ident = &input.ident;
    Ok(quote! {
        impl #keys::StageKeys for #ident {
            fn key_docs() -> ::std::vec::Vec<::fairpipe_keys::KeyDoc> {
                #body
            }
            fn keys() -> &'static [::fairpipe_keys::KeyDoc] {
                static KEYS: ::std::sync::LazyLock<::std::vec::Vec<::fairpipe_keys::KeyDoc>> =
                    ::std::sync::LazyLock::new(<#ident as #keys::StageKeys>::key_docs);
                &KEYS
            }
        }
    })
}

/// The body of `key_docs` for a config struct.
fn struct_keys(input: &DeriveInput, data: &syn::DataStruct) -> syn::Result<TokenStream2> {
    let mut struct_default = false;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") && !meta.input.peek(syn::Token![=]) {
                struct_default = true;
                Ok(())
            } else if meta.path.is_ident("deny_unknown_fields") {
                Ok(())
            } else {
                Err(not_understood(&meta, "the struct", "default and deny_unknown_fields"))
            }
        })?;
    }
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(&input.ident, "#[derive(StageKeys)] is for a config struct with named fields"));
    };
    let keys = quote!(::fairpipe_keys);
    let mut pushes = Vec::new();
    for field in &fields.named {
        let attrs = key_attrs(field)?;
        if attrs.skip {
            continue;
        }
        let ident = field.ident.as_ref().expect("named fields have names");
        let ty = &field.ty;
        let name = match &attrs.rename {
            Some(lit) => lit.value(),
            None => ident.to_string().trim_start_matches("r#").to_string(),
        };
        if let Some(inner) = name.strip_prefix('*') {
            let _ = inner;
            pushes.push(quote!(keys.extend(<#ty as #keys::StageKeys>::key_docs());));
            continue;
        }
        if let Some(shared) = &attrs.shared {
            pushes.push(quote!(keys.push(#keys::shared(#name, &#shared));));
            continue;
        }
        let comment = doc_text(&field.attrs);
        if comment.is_empty() {
            return Err(syn::Error::new_spanned(field, "#[derive(StageKeys)]: a key needs a `///` comment, which is its description"));
        }
        if comment.contains("[`") {
            return Err(syn::Error::new_spanned(
                field,
                "#[derive(StageKeys)]: the `///` comment is the key's description in `fairpipe list`, where a rustdoc link shows as written; describe without one",
            ));
        }
        let doc = key_doc(&comment);
        let ty_text = match &attrs.ty {
            Some(lit) => quote!(::std::string::String::from(#lit)),
            None => quote!(<#ty as #keys::KeyType>::text()),
        };
        let default = match (&attrs.default_text, &attrs.default) {
            (Some(lit), _) => quote!(::std::string::String::from(#lit)),
            (None, Some(Some(path))) => quote!(#keys::default_text(&#path())),
            (None, Some(None)) => quote!(#keys::default_text(&<#ty as ::std::default::Default>::default())),
            (None, None) if struct_default => quote!(#keys::default_text(&<Self as ::std::default::Default>::default().#ident)),
            (None, None) if option_inner(ty).is_some() => quote!(::std::string::String::from("none")),
            (None, None) => quote!(::std::string::String::from("required")),
        };
        if let Some(tag) = name.strip_prefix('+') {
            let default = match (&attrs.default_text, &attrs.default, struct_default) {
                (None, None, false) => quote!(#keys::first_variant::<#ty>()),
                _ => default,
            };
            let ty_text = match &attrs.ty {
                Some(_) => ty_text,
                None => quote!(#keys::choices::<#ty>()),
            };
            pushes.push(quote! {
                keys.push(#keys::key(#tag, #ty_text, #default, #doc));
                keys.extend(<#ty as #keys::StageKeys>::key_docs());
            });
        } else if attrs.nested {
            let inner = option_inner(ty).unwrap_or(ty);
            pushes.push(quote!(keys.push(#keys::key(#name, #ty_text, #default, #doc).holding(<#inner as #keys::StageKeys>::keys));));
        } else {
            pushes.push(quote!(keys.push(#keys::key(#name, #ty_text, #default, #doc));));
        }
    }
    Ok(quote! {
        let mut keys = ::std::vec::Vec::new();
        #(#pushes)*
        keys
    })
}

/// Check that the serde attributes of an enum or a variant (`on`) are only `allowed` (a renaming:
/// the variants' names are read from serde itself, at run time).
fn only_naming(attrs: &[syn::Attribute], allowed: &str, on: &str) -> syn::Result<()> {
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(allowed) {
                skip_value(&meta)
            } else {
                Err(not_understood(&meta, on, &format!("{allowed} (the variants' names are read from serde itself)")))
            }
        })?;
    }
    Ok(())
}

/// The body of `key_docs` for a tagged enum: its variants' keys, merged.
fn enum_keys(input: &DeriveInput, data: &syn::DataEnum) -> syn::Result<TokenStream2> {
    only_naming(&input.attrs, "rename_all", "the enum")?;
    let keys = quote!(::fairpipe_keys);
    let mut each = Vec::new();
    for variant in &data.variants {
        only_naming(&variant.attrs, "rename", "a variant")?;
        let Fields::Unnamed(fields) = &variant.fields else {
            return Err(syn::Error::new_spanned(variant, "#[derive(StageKeys)]: each variant holds one struct of keys, `Name(Params)`"));
        };
        if fields.unnamed.len() != 1 {
            return Err(syn::Error::new_spanned(variant, "#[derive(StageKeys)]: each variant holds one struct of keys, `Name(Params)`"));
        }
        let ty: &Type = &fields.unnamed[0].ty;
        each.push(quote!(<#ty as #keys::StageKeys>::key_docs()));
    }
    Ok(quote!(#keys::variant_keys(#keys::variant_names::<Self>(), ::std::vec![#(#each),*])))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(source: &str) -> Result<String, String> {
        crate::tests::expanded_by(expand, source)
    }

    #[test]
    fn what_it_cannot_read_is_an_error_naming_it() {
        let e = expanded("struct C { /// A.\n #[serde(alias = \"b\")] a: f64 }").unwrap_err();
        assert!(e.contains("does not understand `#[serde(alias)]` on a field"), "{e}");
        let e = expanded("#[serde(rename_all = \"camelCase\")] struct C { /// A.\n a: f64 }").unwrap_err();
        assert!(e.contains("`#[serde(rename_all)]` on the struct"), "{e}");
        let e = expanded("struct C { a: f64 }").unwrap_err();
        assert!(e.contains("needs a `///` comment"), "{e}");
        let e = expanded("enum E { A { x: f64 } }").unwrap_err();
        assert!(e.contains("one struct of keys"), "{e}");
        let e = expanded("enum E { #[serde(skip)] A(P) }").unwrap_err();
        assert!(e.contains("`#[serde(skip)]` on a variant"), "{e}");
        let e = expanded("struct C { /// See [`x`].\n a: f64 }").unwrap_err();
        assert!(e.contains("rustdoc link"), "{e}");
        let e = expanded("struct C { /// A.\n #[key(tye = \"x\")] a: f64 }").unwrap_err();
        assert!(e.contains("takes `ty"), "{e}");
    }

    #[test]
    fn a_comment_becomes_the_references_description() {
        assert_eq!(key_doc("Hidden layer widths."), "hidden layer widths");
        assert_eq!(key_doc("SVM penalty C."), "SVM penalty C");
        assert_eq!(key_doc("L-BFGS iterations"), "L-BFGS iterations");
        assert_eq!(key_doc("TestSGD: samples. Then more."), "TestSGD: samples. Then more");
        assert_eq!(key_doc("A threshold"), "a threshold");
        assert_eq!(key_doc("Mini-batch size."), "mini-batch size");
        assert_eq!(key_doc("L2 penalty."), "L2 penalty");
    }
}
