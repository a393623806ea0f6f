//! text-reverse and word-count: two oe node kinds written in Rust, over bindings that bindgen
//! generated from the installed C headers (README.md). Both read `args.text` and write one value
//! to the single state field the node lists in `writes`.
//!
//! Everything the host calls is an `extern "C"` function whose body runs under `catch_unwind`:
//! unwinding out of Rust into the host's C++ frames is undefined behaviour, so a panic becomes a
//! status and a message instead (`OE_INTERNAL`), and only the node fails.

// Every unsafe operation sits in an `unsafe` block with its reason, even inside `unsafe fn`s.
#![deny(unsafe_op_in_unsafe_fn)]

mod json;

#[allow(non_camel_case_types, non_upper_case_globals, non_snake_case, dead_code)]
mod sys {
    // Written by bindgen over <prefix>/include/oe/oe.h; the path must be absolute.
    include!(env!(
        "OE_BINDINGS",
        "set OE_BINDINGS to the absolute path of the file bindgen wrote (see README.md)"
    ));
}

use std::any::Any;
use std::mem::size_of;
use std::os::raw::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use sys::*;

// ---- The descriptors: static, immutable, handed to the host as raw pointers. --------------------

/// What a node of a kind computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Reverse,
    CountWords,
}

/// A kind descriptor with the plugin's own data after it. The host reads only `desc` and hands
/// the same pointer back to `create`, which finds the `Kind` again by address (`kind_for`).
#[repr(C)]
struct Kind {
    desc: oe_node_kind,
    name: &'static str,
    op: Op,
}

// The descriptors hold raw pointers (to static strings and functions), which Rust does not let a
// `static` share between threads unless told: nothing in them is ever written.
struct Kinds([Kind; 2]);
unsafe impl Sync for Kinds {}

struct Entry(oe_plugin_entry);
unsafe impl Sync for Entry {}

/// A static C string from a byte literal that ends in NUL (checked at compile time).
const fn c_str(bytes: &'static [u8]) -> *const c_char {
    assert!(!bytes.is_empty() && bytes[bytes.len() - 1] == 0, "C strings end with \\0");
    bytes.as_ptr() as *const c_char
}

/// For `oe validate`: the node needs a string `args.text`.
const ARGS_TEXT_SCHEMA: &[u8] =
    b"{\"type\":\"object\",\"required\":[\"args\"],\"properties\":{\"args\":\
      {\"type\":\"object\",\"required\":[\"text\"],\"properties\":\
      {\"text\":{\"type\":\"string\"}}}}}\0";

const fn kind(
    name: &'static str,
    c_name: &'static [u8],
    description: &'static [u8],
    op: Op,
) -> Kind {
    Kind {
        desc: oe_node_kind {
            struct_size: size_of::<oe_node_kind>() as u32,
            flags: 0, // not OE_NODE_KIND_REENTRANT: one call per oe_node at a time
            kind: c_str(c_name),
            description: c_str(description),
            spec_schema_json: c_str(ARGS_TEXT_SCHEMA),
            create: Some(create),
            destroy: Some(destroy),
            invoke: Some(invoke),
            cancel: None, // a call takes microseconds: nothing to interrupt
        },
        name,
        op,
    }
}

static KINDS: Kinds = Kinds([
    kind(
        "text-reverse",
        b"text-reverse\0",
        b"Reverses args.text (by Unicode scalar value) into the node's one `writes` field\0",
        Op::Reverse,
    ),
    kind(
        "word-count",
        b"word-count\0",
        b"Counts the whitespace-separated words of args.text into the node's one `writes` field\0",
        Op::CountWords,
    ),
]);

static ENTRY: Entry = Entry(oe_plugin_entry {
    struct_size: size_of::<oe_plugin_entry>() as u32,
    abi_version: OE_ABI_VERSION,
    min_host_abi: OE_ABI_VERSION,
    flags: 0,
    plugin_id: c_str(b"dev.oe.example.rust-text\0"),
    plugin_version: c_str(b"0.1.0\0"),
    description: c_str(b"Example plugin in Rust: the text-reverse and word-count node kinds\0"),
    init: Some(init),
    deinit: Some(deinit),
    node_kind_count: Some(node_kind_count),
    node_kind_at: Some(node_kind_at),
    get_extension: None,
});

/// The host's rule (oe_abi_compatible in oe/version.h, a `static inline` function that bindgen
/// does not bind): 0.x needs the same major and minor; from 1.0, the same major and a host at
/// least as new as `min_host_abi`.
fn abi_compatible(host_abi: u32, plugin_abi: u32, min_host_abi: u32) -> bool {
    let (major, minor) = (|v: u32| v >> 16, |v: u32| v & 0xffff);
    if major(host_abi) != major(plugin_abi) {
        return false;
    }
    if major(host_abi) == 0 {
        return minor(host_abi) == minor(plugin_abi);
    }
    min_host_abi <= host_abi
}

/// The one symbol the library exports. Saying no to an incompatible host here (NULL) gets a
/// clear "refused to load into this host" from oe rather than a crash on a changed layout.
#[no_mangle]
pub extern "C" fn oe_plugin_entry_v1(host_abi_version: u32) -> *const oe_plugin_entry {
    guard_or(ptr::null(), || {
        if abi_compatible(host_abi_version, ENTRY.0.abi_version, ENTRY.0.min_host_abi) {
            &ENTRY.0 as *const oe_plugin_entry
        } else {
            ptr::null()
        }
    })
}

// ---- Calling the host. --------------------------------------------------------------------------

/// The host's service table, valid from init until deinit returns; every function in it is
/// thread-safe. `log` and `write` are in every version of the table, so no struct_size check.
#[derive(Clone, Copy)]
struct Host(*const oe_host_api);

impl Host {
    /// Appends bytes to a host-owned writer (the host copies them before returning).
    fn write(self, writer: *mut oe_writer, bytes: &[u8]) -> oe_status {
        // SAFETY: self.0 is the table init received, still valid (see above).
        match unsafe { (*self.0).write } {
            // SAFETY: `writer` came from the host for the call in progress; `bytes` outlives it.
            Some(write) => unsafe { write(writer, borrowed(bytes)) },
            None => OE_INTERNAL,
        }
    }

    /// One line in the host's log; a node or call context makes the host name the node.
    fn log(self, ctx: *mut oe_host_ctx, level: oe_log_level, message: &str) {
        // SAFETY: as in write; ctx is a context the host gave us and that is still valid.
        if let Some(log) = unsafe { (*self.0).log } {
            unsafe { log(ctx, level, borrowed(message.as_bytes())) };
        }
    }
}

/// Lends `bytes` to the host as an oe_str (valid while `bytes` is).
fn borrowed(bytes: &[u8]) -> oe_str {
    oe_str { ptr: bytes.as_ptr() as *const c_char, len: bytes.len() as _ }
}

/// The bytes of an oe_str the host lent us: valid only during the current call, not NUL-terminated.
///
/// # Safety
/// `s` must describe readable memory that outlives the returned slice.
unsafe fn bytes_of<'a>(s: oe_str) -> &'a [u8] {
    if s.ptr.is_null() || s.len == 0 {
        &[] // from_raw_parts must not see a null pointer, even for zero bytes
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(s.ptr as *const u8, s.len as usize) }
    }
}

// ---- Panics and failures at the boundary. -------------------------------------------------------

/// A call that failed: the status for the host, the message for the call's error writer.
#[derive(Debug)]
struct Failure {
    status: oe_status,
    message: String,
}

fn invalid(message: String) -> Failure {
    Failure { status: OE_INVALID_ARGUMENT, message }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a panic without a message"
    }
}

/// Runs a fallible body for a call that has an error writer: a panic becomes OE_INTERNAL, and
/// any failure's message goes to `err`.
fn guard(host: Host, err: *mut oe_writer, body: impl FnOnce() -> Result<(), Failure>) -> oe_status {
    // AssertUnwindSafe: after a panic the body's state is dropped, never looked at again.
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(Failure {
            status: OE_INTERNAL,
            message: format!("the Rust plugin panicked: {}", panic_message(&*payload)),
        })
    });
    match outcome {
        Ok(()) => OE_OK,
        Err(failure) => {
            host.write(err, failure.message.as_bytes());
            // The status set is open, but OE_OK would tell the host the call worked.
            if failure.status == OE_OK {
                OE_UNKNOWN
            } else {
                failure.status
            }
        }
    }
}

/// Runs a body for a call that cannot report an error: a panic gives `fallback`.
fn guard_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

// ---- The plugin and its nodes. ------------------------------------------------------------------

/// Library-wide state behind the host's `oe_plugin*`, from init to deinit.
struct Plugin {
    host: Host,
}

/// One node instance behind the host's `oe_node*`, from create to destroy.
struct Node {
    host: Host,
    /// The node context create received: valid until destroy returns; logs name the node.
    ctx: *mut oe_host_ctx,
    kind: &'static Kind,
    id: String,
    field: String, // the one state field the node writes
}

impl Node {
    fn describe(&self) -> String {
        format!("{} node \"{}\"", self.kind.name, self.id)
    }
}

/// The `Kind` whose descriptor is at `desc`, if it is one of ours.
fn kind_for(desc: *const oe_node_kind) -> Option<&'static Kind> {
    KINDS.0.iter().find(|k| ptr::eq(&k.desc, desc))
}

unsafe extern "C" fn init(
    host: *const oe_host_api,
    _plugin_ctx: *mut oe_host_ctx,
    out_self: *mut *mut oe_plugin,
    err: *mut oe_writer,
) -> oe_status {
    let host = Host(host);
    guard(host, err, || {
        let plugin = Box::new(Plugin { host });
        // SAFETY: out_self is the host's out-parameter for this call.
        unsafe { *out_self = Box::into_raw(plugin) as *mut oe_plugin };
        Ok(())
    })
}

unsafe extern "C" fn deinit(plugin: *mut oe_plugin) {
    guard_or((), || {
        if !plugin.is_null() {
            // SAFETY: made by Box::into_raw in init; the host calls deinit once, last.
            drop(unsafe { Box::from_raw(plugin as *mut Plugin) });
        }
    })
}

unsafe extern "C" fn node_kind_count(_plugin: *const oe_plugin) -> u32 {
    KINDS.0.len() as u32
}

unsafe extern "C" fn node_kind_at(_plugin: *const oe_plugin, index: u32) -> *const oe_node_kind {
    guard_or(ptr::null(), || match KINDS.0.get(index as usize) {
        Some(kind) => &kind.desc as *const oe_node_kind,
        None => ptr::null(),
    })
}

/// `config_json` is {"node": <the node's spec>, "experience_dir": "..."}: the spec must list
/// exactly one field in `writes`, which is where the result goes.
unsafe extern "C" fn create(
    plugin: *mut oe_plugin,
    kind: *const oe_node_kind,
    config_json: oe_str,
    node_ctx: *mut oe_host_ctx,
    out_node: *mut *mut oe_node,
    err: *mut oe_writer,
) -> oe_status {
    // SAFETY: the host passes the plugin init made; it lives until deinit.
    let host = unsafe { &*(plugin as *const Plugin) }.host;
    guard(host, err, || {
        // One create serves both kinds: the descriptor pointer says which one this node is.
        let kind = kind_for(kind).ok_or_else(|| Failure {
            status: OE_INTERNAL,
            message: "create was called with a kind descriptor this plugin did not hand out"
                .to_string(),
        })?;
        // SAFETY: config_json is borrowed for this call only; parse copies what it keeps.
        let config = json::parse(unsafe { bytes_of(config_json) })
            .map_err(|e| invalid(format!("{}: the host sent malformed JSON: {}", kind.name, e)))?;
        let spec = config.get("node");
        let id = spec.and_then(|s| s.get("id")).and_then(json::Value::as_str).unwrap_or("?");
        let writes = spec.and_then(|s| s.get("writes")).and_then(json::Value::as_array);
        let field = match writes {
            Some([json::Value::String(field)]) => field.clone(),
            _ => {
                return Err(invalid(format!(
                "{} node \"{}\": list exactly one state field in `writes`; the result goes there",
                kind.name, id
            )))
            }
        };
        let node = Node { host, ctx: node_ctx, kind, id: id.to_string(), field };
        node.host.log(node.ctx, OE_LOG_INFO, &format!("{} writes `{}`", kind.name, node.field));
        // SAFETY: out_node is the host's out-parameter for this call.
        unsafe { *out_node = Box::into_raw(Box::new(node)) as *mut oe_node };
        Ok(())
    })
}

unsafe extern "C" fn destroy(node: *mut oe_node) {
    guard_or((), || {
        // SAFETY: made by Box::into_raw in create; no call of this node is in progress.
        drop(unsafe { Box::from_raw(node as *mut Node) });
    })
}

/// `request_json` is {"node", "args", "state_view", "edge_inputs", "context"}; the response is
/// {"state_delta": {<field>: <result>}, "edge_output": <result>}.
unsafe extern "C" fn invoke(node: *mut oe_node, invocation: *const oe_invocation) -> oe_status {
    // SAFETY: the node create made (alive until destroy) and the host's invocation for this call.
    let (node, call) = unsafe { (&*(node as *const Node), &*invocation) };
    guard(node.host, call.error, || {
        // SAFETY: request_json is borrowed for this call only; parse copies what it keeps.
        let request = json::parse(unsafe { bytes_of(call.request_json) }).map_err(|e| {
            invalid(format!("{}: the host sent malformed JSON: {}", node.describe(), e))
        })?;
        let text = request.get("args").and_then(|a| a.get("text")).and_then(json::Value::as_str);
        let text = text.ok_or_else(|| {
            invalid(format!(
                "{}: args.text must be a string, e.g. args: {{text: \"hi\"}}",
                node.describe()
            ))
        })?;
        let result = match node.kind.op {
            // By Unicode scalar value: a combining accent moves to the other side of its letter;
            // grapheme clusters would need a crate (unicode-segmentation).
            Op::Reverse => json::quote(&text.chars().rev().collect::<String>()),
            Op::CountWords => text.split_whitespace().count().to_string(),
        };
        let response = format!(
            "{{\"state_delta\":{{{}:{}}},\"edge_output\":{}}}",
            json::quote(&node.field),
            result,
            result
        );
        match node.host.write(call.response, response.as_bytes()) {
            OE_OK => Ok(()),
            status => Err(Failure {
                status,
                message: format!(
                    "{}: could not hand the result to the host (too large?)",
                    node.describe()
                ),
            }),
        }
    })
}

#[cfg(test)]
mod tests {
    //! The plugin driven through its C tables, as oe drives it, with a host made of Rust
    //! functions: writers are Vec<u8>s, and the log is a Vec<String> behind the context pointer.
    use super::*;

    unsafe extern "C" fn test_write(writer: *mut oe_writer, bytes: oe_str) -> oe_status {
        unsafe { (*(writer as *mut Vec<u8>)).extend_from_slice(bytes_of(bytes)) };
        OE_OK
    }

    unsafe extern "C" fn test_log(ctx: *mut oe_host_ctx, _level: oe_log_level, message: oe_str) {
        let line = String::from_utf8_lossy(unsafe { bytes_of(message) }).into_owned();
        unsafe { (*(ctx as *mut Vec<String>)).push(line) };
    }

    fn test_host() -> oe_host_api {
        oe_host_api {
            struct_size: size_of::<oe_host_api>() as u32,
            abi_version: OE_ABI_VERSION,
            log: Some(test_log),
            write: Some(test_write),
            release: None,
            emit_event: None,
            state_get: None,
            is_cancelled: None,
            get_extension: None,
        }
    }

    fn writer(buf: &mut Vec<u8>) -> *mut oe_writer {
        buf as *mut Vec<u8> as *mut oe_writer
    }

    fn text(buf: &[u8]) -> &str {
        std::str::from_utf8(buf).unwrap()
    }

    /// init, create (with the kind at `index`), one invoke, destroy, deinit: returns
    /// (create status, invoke status, response, error text, log lines).
    fn run(
        index: u32,
        config: &str,
        request: &str,
    ) -> (oe_status, oe_status, String, String, Vec<String>) {
        let host = test_host();
        let entry = unsafe { &*oe_plugin_entry_v1(OE_ABI_VERSION) };
        let (mut response, mut error, mut log) = (Vec::new(), Vec::new(), Vec::<String>::new());
        let ctx = &mut log as *mut Vec<String> as *mut oe_host_ctx;
        unsafe {
            let mut plugin = ptr::null_mut();
            assert_eq!(
                entry.init.unwrap()(&host, ptr::null_mut(), &mut plugin, writer(&mut error)),
                OE_OK
            );
            let kind = &*entry.node_kind_at.unwrap()(plugin, index);
            let mut node = ptr::null_mut();
            let created = kind.create.unwrap()(
                plugin,
                kind,
                borrowed(config.as_bytes()),
                ctx,
                &mut node,
                writer(&mut error),
            );
            let mut invoked = OE_UNKNOWN;
            if created == OE_OK {
                let call = oe_invocation {
                    struct_size: size_of::<oe_invocation>() as u32,
                    attempt: 1,
                    request_json: borrowed(request.as_bytes()),
                    call: ptr::null_mut(),
                    response: writer(&mut response),
                    error: writer(&mut error),
                };
                invoked = kind.invoke.unwrap()(node, &call);
                kind.destroy.unwrap()(node);
            }
            entry.deinit.unwrap()(plugin);
            (created, invoked, text(&response).to_string(), text(&error).to_string(), log)
        }
    }

    const CONFIG: &str = r#"{"node": {"id": "n1", "writes": ["out"]}, "experience_dir": "/x"}"#;

    #[test]
    fn entry_describes_the_plugin_and_refuses_other_abis() {
        let entry = unsafe { &*oe_plugin_entry_v1(OE_ABI_VERSION) };
        assert_eq!(entry.struct_size as usize, size_of::<oe_plugin_entry>());
        assert_eq!(unsafe { entry.node_kind_count.unwrap()(ptr::null()) }, 2);
        assert!(unsafe { entry.node_kind_at.unwrap()(ptr::null(), 2) }.is_null());
        assert!(oe_plugin_entry_v1(OE_ABI_VERSION + 1).is_null()); // another 0.x minor
        assert!(oe_plugin_entry_v1(OE_ABI_VERSION + (1 << 16)).is_null()); // another major
    }

    #[test]
    fn text_reverse_writes_its_field_and_logs_through_the_node_context() {
        let (created, invoked, response, error, log) =
            run(0, CONFIG, r#"{"args": {"text": "ab\u00e9 \"q\""}, "state_view": {}}"#);
        assert_eq!((created, invoked, error.as_str()), (OE_OK, OE_OK, ""));
        assert_eq!(response, r#"{"state_delta":{"out":"\"q\" éba"},"edge_output":"\"q\" éba"}"#);
        assert_eq!(log, vec!["text-reverse writes `out`".to_string()]);
    }

    #[test]
    fn word_count_counts_whitespace_separated_words() {
        let (_, invoked, response, _, _) =
            run(1, CONFIG, r#"{"args": {"text": " one\ttwo\n three  "}}"#);
        assert_eq!(invoked, OE_OK);
        assert_eq!(response, r#"{"state_delta":{"out":3},"edge_output":3}"#);
    }

    #[test]
    fn bad_specs_and_requests_fail_with_a_message_naming_the_node() {
        let (created, _, _, error, _) =
            run(0, r#"{"node": {"id": "n1", "writes": ["a", "b"]}}"#, "{}");
        assert_eq!(created, OE_INVALID_ARGUMENT);
        assert!(
            error.contains("text-reverse node \"n1\": list exactly one state field"),
            "{}",
            error
        );

        let (_, invoked, response, error, _) = run(1, CONFIG, r#"{"args": {"text": 7}}"#);
        assert_eq!((invoked, response.as_str()), (OE_INVALID_ARGUMENT, ""));
        assert!(error.contains("word-count node \"n1\": args.text must be a string"), "{}", error);

        let (_, invoked, _, error, _) = run(1, CONFIG, r#"{"args": "#);
        assert_eq!(invoked, OE_INVALID_ARGUMENT);
        assert!(error.contains("malformed JSON"), "{}", error);
    }

    #[test]
    fn a_panic_becomes_oe_internal_with_its_message() {
        let host = test_host();
        let mut error = Vec::new();
        let status = guard(Host(&host), writer(&mut error), || panic!("boom {}", 42));
        assert_eq!(status, OE_INTERNAL);
        assert_eq!(text(&error), "the Rust plugin panicked: boom 42");
        assert_eq!(guard_or(7, || -> i32 { panic!("quiet") }), 7);
    }

    #[test]
    fn a_failure_claiming_ok_is_reported_as_unknown() {
        let host = test_host();
        let mut error = Vec::new();
        let status = guard(Host(&host), writer(&mut error), || {
            Err(Failure { status: OE_OK, message: "odd".into() })
        });
        assert_eq!((status, text(&error)), (OE_UNKNOWN, "odd"));
    }
}
