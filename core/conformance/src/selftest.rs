//! The suite must catch a plugin that breaks the rules: a fake plugin that emits every seed with
//! its protected value flipped, discriminatory or not, ignores `should_stop` and hides the
//! model's failures.

use std::ffi::{c_char, CStr, CString};

use fairpipe_ffi::{self as ffi, status, FfiContext, FfiPluginDescriptor};

use crate::{check, Setup, Subject};

/// # Safety
/// `out` is writable.
unsafe extern "C" fn describe(out: *mut *mut c_char) -> i32 {
    let json = r#"{"name":"liar","version":"0.0.1","doc":"Emits every seed flipped, discriminatory or not.","params":[]}"#;
    // SAFETY: a writable out-pointer; freed by `drop_string`.
    unsafe { *out = CString::new(json).unwrap_or_default().into_raw() };
    status::OK
}

/// # Safety
/// `params` is a NUL-terminated string; `error` is writable.
unsafe extern "C" fn validate(params: *const c_char, error: *mut *mut c_char) -> i32 {
    // SAFETY: the host's NUL-terminated JSON.
    let text = unsafe { CStr::from_ptr(params) }.to_string_lossy().into_owned();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    match value.as_object().and_then(|m| m.keys().find(|k| *k != "_inject_panic")) {
        Some(key) => {
            // SAFETY: a writable out-pointer; freed by `drop_string`.
            unsafe { *error = CString::new(format!("unknown parameter `{key}`")).unwrap_or_default().into_raw() };
            status::INVALID_PARAMS
        }
        None => status::OK,
    }
}

/// # Safety
/// `ctx` is a valid context; `error` is writable.
unsafe extern "C" fn generate(ctx: *const FfiContext, error: *mut *mut c_char) -> i32 {
    // SAFETY: a valid context for the call.
    let ctx = unsafe { &*ctx };
    // SAFETY: the host's NUL-terminated JSON.
    if unsafe { CStr::from_ptr(ctx.params_json) }.to_string_lossy().contains("_inject_panic") {
        // SAFETY: a writable out-pointer; freed by `drop_string`.
        unsafe { *error = CString::new("injected panic").unwrap_or_default().into_raw() };
        return status::PANIC;
    }
    let cols = ctx.seeds.cols;
    // SAFETY: rows*cols seed values.
    let seeds = unsafe { std::slice::from_raw_parts(ctx.seeds.data, ctx.seeds.rows * cols) };
    let cb = &ctx.callbacks;
    for row in seeds.chunks_exact(cols).take(50) {
        let mut p = [0.0];
        // SAFETY: one row and room for one result; the failure is ignored on purpose.
        let _ = unsafe { (cb.predict)(cb.ctx, row.as_ptr(), 1, cols, p.as_mut_ptr()) };
        let mut flipped = row.to_vec();
        flipped[cols - 1] = 1.0 - flipped[cols - 1];
        // SAFETY: two rows of `cols` values.
        unsafe { (cb.emit)(cb.ctx, row.as_ptr(), flipped.as_ptr(), cols, p[0], p[0], 0) };
    }
    status::OK
}

/// # Safety
/// `s` is null or came from this fake.
unsafe extern "C" fn drop_string(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: allocated by `CString::into_raw` here.
        drop(unsafe { CString::from_raw(s) });
    }
}

static LIAR: FfiPluginDescriptor = FfiPluginDescriptor {
    abi_major: ffi::ABI_MAJOR,
    abi_minor: ffi::ABI_MINOR,
    struct_size: std::mem::size_of::<FfiPluginDescriptor>(),
    name: c"liar".as_ptr(),
    version: c"0.0.1".as_ptr(),
    kind: ffi::kind::GENERATOR,
    describe,
    validate,
    generate,
    drop_string,
};

extern "C" fn liar_entry() -> *const FfiPluginDescriptor {
    &LIAR
}

#[test]
fn a_plugin_that_breaks_the_rules_is_caught_on_each_rule() {
    // SAFETY: `liar_entry` returns the static `LIAR` descriptor, laid out as the ABI's.
    let subject = Subject::from_entry(unsafe { fairpipe_ffi::PluginEntry::new(liar_entry) }).unwrap();
    let failures = check(&subject, &Setup::planted()).join("\n");
    assert!(failures.contains("is not discriminatory"), "{failures}");
    assert!(failures.contains("told to stop at once"), "{failures}");
    assert!(failures.contains("a failing model"), "{failures}");
    assert!(failures.contains("another seed gave exactly the same cases"), "{failures}");
}
