//! MCP Bundles built here (the tiny Node server): one installs and runs with its settings (a
//! sensitive one in the secret store, a folder picked as a sandbox grant); the broken ones (`..`,
//! an absolute path, a symlink, a zip bomb, a bad manifest, a platform or runtime this computer
//! lacks) are refused and leave nothing behind; signatures are checked.

use std::path::Path;

use serde_json::{json, Value};
use switchboard_engine::bundle::{self, Signature};
use switchboard_engine::mcp::{SandboxSetting, ServerStatus};
use switchboard_engine::registry::install::{Choices, InstallError};
use switchboard_engine::secrets::SecretValue;
use switchboard_engine::{CatalogError, Runtime};

use crate::registry::catalog_runtime;
use crate::support::bundles::*;
use crate::support::registry::{listed, Registry};

fn choices(values: Value) -> Choices {
    Choices {
        name: String::new(),
        values: serde_json::from_value(values).unwrap(),
        ..Default::default()
    }
}

/// Everything under `dir`, as relative paths.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = vec![];
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

async fn call(rt: &Runtime, tool: &str, args: Value) -> String {
    let out = rt
        .host
        .call_tool(
            tool,
            args.as_object().unwrap().clone(),
            &Default::default(),
            None,
        )
        .await;
    assert!(!out.is_error, "{out:?}");
    out.text
}

/// A bundle whose settings reach its server: a sensitive key (environment), a folder (an
/// argument, and a sandbox grant), a string full of shell and HTML (an argument, as written).
fn configured_bundle() -> Vec<u8> {
    let manifest = tiny_manifest(
        "weather",
        "1.0.0",
        json!({
            "api_key": {"type": "string", "title": "API key", "description": "k", "sensitive": true, "required": true},
            "folder": {"type": "directory", "title": "Folder", "description": "f", "required": true},
            "label": {"type": "string", "title": "Label", "description": "l", "default": "plain"},
            "limit": {"type": "number", "title": "Limit", "description": "n", "min": 1, "max": 10, "default": 3}
        }),
        json!({"API_KEY": "${user_config.api_key}", "LIMIT": "${user_config.limit}"}),
        json!([
            "--folder",
            "${user_config.folder}",
            "--label=${user_config.label}"
        ]),
    );
    tiny_bundle(&manifest, &tiny_tools(&[]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_installs_unpacked_with_its_settings_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let picked = tempfile::tempdir().unwrap();
    let rt = catalog_runtime(dir.path(), "http://127.0.0.1:9").await;
    let p = rt.bundle_prepare(configured_bundle()).await.unwrap();
    assert_eq!(p.name, "weather");
    assert_eq!(p.default_name, "Tiny-weather");
    assert_eq!(p.signature, Some(Signature::Unsigned));
    let keys: Vec<&str> = p.fields.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys, ["api_key", "folder", "label", "limit"]);
    assert!(
        files_under(dir.path())
            .iter()
            .all(|f| !f.starts_with("bundles")),
        "opening writes nothing"
    );

    let nasty = "; rm -rf ~ $(id) `whoami` <img src=x onerror=alert(1)>";
    let folder = picked.path().display().to_string();
    let mut c = choices(json!({"api_key": "k-9", "folder": folder, "label": nasty, "limit": 20}));
    c.name = "tiny".into();
    let e = rt.catalog_preview(&p.token, &c).unwrap_err();
    assert!(e.to_string().contains("from 1 to 10"), "{e}");
    c.values.insert("limit".into(), json!(7));
    let preview = rt.catalog_preview(&p.token, &c).unwrap();
    // a folder of its own: under its server's name, its version and a tag of this install
    let unpacked = std::path::PathBuf::from(preview.cwd.clone().unwrap());
    assert_eq!(
        unpacked.parent(),
        Some(dir.path().join("bundles/tiny").as_path())
    );
    let leaf = unpacked.file_name().unwrap().to_string_lossy().into_owned();
    assert!(leaf.starts_with("1.0.0-") && leaf.len() > 10, "{leaf}");
    let script = unpacked.join("server/index.js").display().to_string();
    assert_eq!(preview.command.as_deref(), Some("node"));
    assert_eq!(
        preview.args,
        [
            script.clone(),
            "--folder".into(),
            folder.clone(),
            format!("--label={nasty}")
        ]
    );
    let sandbox = preview.sandbox.clone().unwrap();
    assert_eq!(sandbox.read, [unpacked.display().to_string()]);
    assert_eq!(sandbox.write, std::slice::from_ref(&folder));
    assert!(!sandbox.network);
    assert!(preview
        .env
        .iter()
        .any(|v| v.name == "API_KEY" && v.value.is_none() && v.secret));

    let (name, config) = rt.catalog_install(&p.token, &c).await.unwrap();
    assert!(unpacked.join("manifest.json").is_file());
    assert!(matches!(
        config.servers[&name].env["API_KEY"],
        SecretValue::Stored(_)
    ));
    assert!(!std::fs::read_to_string(dir.path().join("mcp.json"))
        .unwrap()
        .contains("k-9"));

    // the user's second yes: it starts, sandboxed (where the kernel can), and its settings reach it
    let config = rt.set_server_enabled(&name, true).await.unwrap();
    rt.mcp_applied().await;
    let view = rt
        .host
        .servers()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap();
    if view.status != ServerStatus::Running {
        panic!("{view:?}");
    }
    assert!(matches!(
        config.servers[&name].sandbox,
        Some(SandboxSetting::On(_))
    ));
    let argv: Vec<String> =
        serde_json::from_str(&call(&rt, "tiny__argv", json!({})).await).unwrap();
    assert_eq!(
        argv,
        ["--folder".to_string(), folder, format!("--label={nasty}")]
    );
    assert_eq!(
        call(&rt, "tiny__env", json!({"name": "API_KEY"})).await,
        "k-9"
    );
    assert_eq!(call(&rt, "tiny__env", json!({"name": "LIMIT"})).await, "7");
    rt.host.shutdown().await;
}

/// Opens `bytes` as a bundle in a fresh runtime; the refusal, and that nothing was written.
async fn refused(bytes: Vec<u8>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let rt = catalog_runtime(dir.path(), "http://127.0.0.1:9").await;
    let before = files_under(dir.path());
    let e = rt.bundle_prepare(bytes).await.unwrap_err().to_string();
    assert_eq!(files_under(dir.path()), before, "{e}");
    e
}

fn with_manifest(patch: Value) -> Vec<u8> {
    let mut m = tiny_manifest("bad", "1.0.0", json!({}), json!({}), json!([]));
    for (k, v) in patch.as_object().unwrap() {
        m[k] = v.clone();
    }
    tiny_bundle(&m, &tiny_tools(&[]))
}

#[tokio::test]
async fn broken_or_hostile_bundles_are_refused_and_leave_nothing() {
    let manifest = serde_json::to_vec(&tiny_manifest(
        "x",
        "1.0.0",
        json!({}),
        json!({}),
        json!([]),
    ))
    .unwrap();
    let js = tiny_server_js(&tiny_tools(&[])).into_bytes();
    let ok = |extra: Item<'static>| {
        zip_of(&[
            Item::File("manifest.json", manifest.clone()),
            Item::File("server/index.js", js.clone()),
            extra,
        ])
    };
    let bomb = vec![0u8; 40 * 1024 * 1024];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (ok(Item::File("../escape.js", b"x".to_vec())), ".."),
        (
            ok(Item::File("server/../../escape.js", b"x".to_vec())),
            "..",
        ),
        (
            ok(Item::File("/etc/cron.d/evil", b"x".to_vec())),
            "absolute",
        ),
        (
            ok(Item::Symlink("server/link", "/etc/passwd")),
            "symbolic link",
        ),
        (ok(Item::File("server/zeros.bin", bomb)), "zip bomb"),
        (b"not a zip at all".to_vec(), "not a zip"),
        (
            zip_of(&[Item::File("server/index.js", js.clone())]),
            "manifest.json",
        ),
        (
            zip_of(&[Item::File("manifest.json", b"{not json".to_vec())]),
            "manifest",
        ),
        (
            with_manifest(json!({"manifest_version": "7.0"})),
            "manifest_version",
        ),
        (
            with_manifest(
                json!({"server": {"type": "node", "entry_point": "server/missing.js",
            "mcp_config": {"command": "node"}}}),
            ),
            "not in the bundle",
        ),
        (
            with_manifest(json!({"compatibility": {"platforms": ["win32", "darwin"]}})),
            "Windows and macOS",
        ),
        (
            with_manifest(json!({"compatibility": {"runtimes": {"node": ">=99.0.0"}}})),
            "Node.js >=99.0.0",
        ),
        (
            with_manifest(json!({
                "user_config": {"t": {"type": "string", "title": "T", "description": "t", "sensitive": true}},
                "server": {"type": "node", "entry_point": "server/index.js",
                    "mcp_config": {"command": "node", "args": ["--token=${user_config.t}"]}}
            })),
            "command line",
        ),
    ];
    for (bytes, says) in cases {
        let e = refused(bytes).await;
        assert!(e.contains(says), "expected \"{says}\" in: {e}");
    }
}

#[tokio::test]
async fn a_bundle_whose_sizes_lie_is_stopped_while_unpacking_and_leaves_nothing() {
    let mut bytes = plain_bundle("liar", "1.0.0", &[]);
    // the central directory's uncompressed size of server/index.js, made smaller than it is
    let name = b"server/index.js";
    let at = bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == [0x50, 0x4b, 0x01, 0x02])
        .map(|(i, _)| i)
        .find(|i| bytes[i + 46..].starts_with(name))
        .unwrap();
    bytes[at + 24..at + 28].copy_from_slice(&10u32.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let rt = catalog_runtime(dir.path(), "http://127.0.0.1:9").await;
    let p = rt.bundle_prepare(bytes).await.unwrap();
    let mut c = choices(json!({}));
    c.name = "liar".into();
    let e = rt.catalog_install(&p.token, &c).await.unwrap_err();
    assert!(e.to_string().contains("index.js"), "{e}");
    assert!(
        !dir.path().join("bundles").exists(),
        "{:?}",
        files_under(dir.path())
    );
    assert!(rt.mcp_config().servers.is_empty());
}

mod signing {
    use openssl::asn1::Asn1Time;
    use openssl::hash::MessageDigest;
    use openssl::pkcs7::{Pkcs7, Pkcs7Flags};
    use openssl::pkey::{PKey, Private};
    use openssl::rsa::Rsa;
    use openssl::stack::Stack;
    use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage};
    use openssl::x509::{X509NameBuilder, X509};

    /// How a leaf certificate may be used (its extended key usage).
    #[derive(Clone, Copy, PartialEq)]
    pub enum Usage {
        /// No extended key usage at all.
        Any,
        CodeSigning,
        /// A website's (server authentication).
        Server,
    }

    pub fn cert(
        cn: &str,
        issuer: Option<(&X509, &PKey<Private>)>,
        ca: bool,
    ) -> (X509, PKey<Private>) {
        cert_for(
            cn,
            issuer,
            ca,
            if ca { Usage::Any } else { Usage::CodeSigning },
        )
    }

    pub fn cert_for(
        cn: &str,
        issuer: Option<(&X509, &PKey<Private>)>,
        ca: bool,
        usage: Usage,
    ) -> (X509, PKey<Private>) {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        name.append_entry_by_text("CN", cn).unwrap();
        let name = name.build();
        let mut b = X509::builder().unwrap();
        b.set_version(2).unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(issuer.map(|(c, _)| c.subject_name()).unwrap_or(&name))
            .unwrap();
        b.set_pubkey(&key).unwrap();
        b.set_not_before(&Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        b.set_not_after(&Asn1Time::days_from_now(30).unwrap())
            .unwrap();
        if ca {
            b.append_extension(BasicConstraints::new().critical().ca().build().unwrap())
                .unwrap();
        }
        match usage {
            Usage::Any => {}
            Usage::CodeSigning => b
                .append_extension(ExtendedKeyUsage::new().code_signing().build().unwrap())
                .unwrap(),
            Usage::Server => b
                .append_extension(ExtendedKeyUsage::new().server_auth().build().unwrap())
                .unwrap(),
        }
        let signer = issuer.map(|(_, k)| k).unwrap_or(&key);
        b.sign(signer, MessageDigest::sha256()).unwrap();
        (b.build(), key)
    }

    /// `zip` signed as `mcpb sign` does it.
    pub fn signed(zip: &[u8], cert: &X509, key: &PKey<Private>) -> Vec<u8> {
        let certs = Stack::new().unwrap();
        let p7 = Pkcs7::sign(
            cert,
            key,
            &certs,
            zip,
            Pkcs7Flags::DETACHED | Pkcs7Flags::BINARY,
        )
        .unwrap();
        let der = p7.to_der().unwrap();
        let mut out = zip.to_vec();
        out.extend_from_slice(b"MCPB_SIG_V1");
        out.extend_from_slice(&(der.len() as u32).to_le_bytes());
        out.extend_from_slice(&der);
        out.extend_from_slice(b"MCPB_SIG_END");
        out
    }
}

#[tokio::test]
async fn a_signature_is_checked_when_there_is_one() {
    let zip = plain_bundle("signed", "1.0.0", &[]);
    let machine = switchboard_engine::HostMachine { path: None };
    let (own, own_key) = signing::cert("Mallory Self", None, false);
    let o = bundle::open(signing::signed(&zip, &own, &own_key), &machine, b"").unwrap();
    match o.signature {
        Signature::Untrusted {
            publisher,
            fingerprint,
            not_for_code,
        } => {
            assert_eq!(publisher, "Mallory Self");
            assert_eq!(fingerprint.len(), 64);
            assert!(!not_for_code);
        }
        other => panic!("{other:?}"),
    }
    // a certificate from an authority this system trusts (here: one the test adds)
    let (ca, ca_key) = signing::cert("Test Root CA", None, true);
    let (leaf, leaf_key) = signing::cert("Acme Publisher", Some((&ca, &ca_key)), false);
    let roots = ca.to_pem().unwrap();
    let o = bundle::open(signing::signed(&zip, &leaf, &leaf_key), &machine, &roots).unwrap();
    assert!(
        matches!(&o.signature, Signature::Signed { publisher, issuer, .. } if publisher == "Acme Publisher" && issuer == "Test Root CA"),
        "{:?}",
        o.signature
    );
    // a certificate of that trusted authority that is not for signing code (a website's, or
    // one with no extended key usage): not shown as signed
    for usage in [signing::Usage::Server, signing::Usage::Any] {
        let (web, web_key) = signing::cert_for("acme.example", Some((&ca, &ca_key)), false, usage);
        let o = bundle::open(signing::signed(&zip, &web, &web_key), &machine, &roots).unwrap();
        assert!(
            matches!(&o.signature, Signature::Untrusted { publisher, not_for_code: true, .. } if publisher == "acme.example"),
            "{:?}",
            o.signature
        );
    }
    // one byte of the content changed after signing: refused, not "unsigned"
    let mut tampered = signing::signed(&zip, &leaf, &leaf_key);
    let i = zip.len() / 2;
    tampered[i] ^= 0x01;
    let e = bundle::open(tampered, &machine, &roots)
        .unwrap_err()
        .to_string();
    assert!(e.contains("signature"), "{e}");
    assert_eq!(
        bundle::open(zip, &machine, b"").unwrap().signature,
        Signature::Unsigned
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcpb_entry_is_downloaded_checked_against_its_hash_and_runs() {
    let bytes = plain_bundle("hello", "2.0.0", &[("greet", "Says hello")]);
    let reg = Registry::start(vec![]);
    let url = reg.add_file("hello.mcpb", bytes.clone(), "application/octet-stream");
    let sha = bundle::sha256_hex(&bytes);
    let entry = |sha: &str| {
        listed(json!({
            "name": "io.github.acme/hello", "description": "A bundle", "version": "2.0.0",
            "packages": [{"registryType": "mcpb", "identifier": url, "fileSha256": sha,
                          "transport": {"type": "stdio"}}]
        }))
    };
    reg.set_entries(vec![entry(&"0".repeat(64))]);
    let dir = tempfile::tempdir().unwrap();
    let rt = catalog_runtime(dir.path(), &reg.url).await;
    let e = rt
        .catalog_prepare(None, "io.github.acme/hello", None)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("fileSha256"), "{e}");
    assert!(!dir.path().join("bundles").exists());

    reg.set_entries(vec![entry(&sha)]);
    let p = rt
        .catalog_prepare(None, "io.github.acme/hello", None)
        .await
        .unwrap();
    assert_eq!(p.kind, "mcpb");
    let mut c = choices(json!({}));
    c.name = p.default_name.clone();
    let (name, config) = rt.catalog_install(&p.token, &c).await.unwrap();
    let source = config.servers[&name].source.clone().unwrap();
    assert_eq!(source.kind, "mcpb");
    let unpacked = source.bundle_dir.unwrap();
    assert!(
        unpacked.contains(&format!("bundles/{name}/2.0.0-")),
        "{unpacked}"
    );
    assert_eq!(source.bundle_sha256.as_deref(), Some(sha.as_str()));
    rt.set_server_enabled(&name, true).await.unwrap();
    rt.mcp_applied().await;
    assert_eq!(
        call(&rt, &format!("{name}__greet"), json!({})).await,
        "greet ran"
    );
    rt.host.shutdown().await;
}

/// A bundle whose manifest names an installed one (the same name and version, or a name that
/// once mapped to the same folder: `a b` and `a_b`), installed under server names that did too:
/// each gets a folder of its own, the first server's files are as they were, nothing is ever
/// unpacked over them, and each server's identity (what approvals and pins hold for) is its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_that_names_an_installed_one_never_touches_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let rt = catalog_runtime(dir.path(), "http://127.0.0.1:9").await;
    let install = |bytes: Vec<u8>, name: &'static str| {
        let rt = &rt;
        async move {
            let p = rt.bundle_prepare(bytes).await.unwrap();
            let mut c = choices(json!({}));
            c.name = name.into();
            let (name, config) = rt.catalog_install(&p.token, &c).await.unwrap();
            config.servers[&name].clone()
        }
    };
    let first = install(plain_bundle("a b", "1.0.0", &[]), "a b").await;
    let first_dir = std::path::PathBuf::from(first.source.clone().unwrap().bundle_dir.unwrap());
    let script = first_dir.join("server/index.js");
    let (files, code) = (
        files_under(&first_dir),
        std::fs::read_to_string(&script).unwrap(),
    );
    // the same name and version, another server's code; and the name that once met it
    let same = install(
        plain_bundle("a b", "1.0.0", &[("steal", "the newcomer's")]),
        "a_b",
    )
    .await;
    let mapped = install(
        plain_bundle("a_b", "1.0.0", &[("steal", "another newcomer's")]),
        "a.b",
    )
    .await;
    let dirs: Vec<std::path::PathBuf> = [&first, &same, &mapped]
        .iter()
        .map(|c| c.source.clone().unwrap().bundle_dir.unwrap().into())
        .collect();
    for (i, a) in dirs.iter().enumerate() {
        assert_eq!(
            a.parent().unwrap().parent(),
            Some(dir.path().join("bundles").as_path())
        );
        for (j, b) in dirs.iter().enumerate() {
            assert!(
                i == j || !(a.starts_with(b) || b.starts_with(a)),
                "{a:?} {b:?}"
            );
        }
    }
    assert_eq!(files_under(&first_dir), files);
    assert_eq!(std::fs::read_to_string(&script).unwrap(), code);
    assert!(!code.contains("steal"));
    // and never over a folder that is there
    let machine = switchboard_engine::HostMachine { path: None };
    let opened = bundle::open(
        plain_bundle("a b", "1.0.0", &[("steal", "x")]),
        &machine,
        b"",
    )
    .unwrap();
    let e = bundle::unpack(&opened, &first_dir).unwrap_err().to_string();
    assert!(e.contains("over files already"), "{e}");
    assert_eq!(std::fs::read_to_string(&script).unwrap(), code);
    // what approvals and pins are bound to tells the three apart
    let ids = [first.identity(), same.identity(), mapped.identity()];
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
    assert_ne!(
        first.source.unwrap().bundle_sha256,
        same.source.unwrap().bundle_sha256
    );

    // a deleted server's bundle goes with it, the others stay
    rt.delete_server("a_b").await.unwrap();
    assert!(!dirs[1].exists() && dirs[0].is_dir() && dirs[2].is_dir());
}

/// What a bundle's publisher chooses is not a grant: a folder setting's default (`${HOME}`) is
/// a suggestion and the field starts empty; a path in its arguments grants nothing (only what
/// is listed, `onlyNamed`); every grant is in the preview with why; and home as a folder it may
/// write is refused until the user types it again, then its row says what that means.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_are_what_the_user_gave_and_each_is_in_the_preview() {
    let dir = tempfile::tempdir().unwrap();
    let rt = catalog_runtime(dir.path(), "http://127.0.0.1:9").await;
    let manifest = tiny_manifest(
        "grabby",
        "1.0.0",
        json!({
            "folder": {"type": "directory", "title": "Folder", "description": "f", "default": "${HOME}"},
            "many": {"type": "directory", "title": "More", "description": "m", "multiple": true, "default": ["${HOME}", "/"]}
        }),
        json!({}),
        json!(["--folder", "${user_config.folder}", "${HOME}/.profile"]),
    );
    let p = rt
        .bundle_prepare(tiny_bundle(&manifest, &tiny_tools(&[])))
        .await
        .unwrap();
    let home = dirs::home_dir().unwrap();
    for f in &p.fields {
        assert_eq!(f.default, None, "{f:?}");
        assert!(
            f.placeholder
                .as_deref()
                .unwrap()
                .contains(&home.display().to_string()),
            "{f:?}"
        );
    }
    let mut c = choices(json!({}));
    c.name = "grabby".into();
    let preview = rt.catalog_preview(&p.token, &c).unwrap();
    let sandbox = preview.sandbox.clone().unwrap();
    assert!(
        sandbox.write.is_empty(),
        "a default is no grant: {sandbox:?}"
    );
    assert!(sandbox.only_named, "nothing from its arguments");
    // the one grant the app derives, listed with why
    let bundle_dir = preview.cwd.clone().unwrap();
    assert_eq!(sandbox.read, std::slice::from_ref(&bundle_dir));
    assert_eq!(preview.grants.len(), 1, "{:?}", preview.grants);
    assert_eq!(preview.grants[0].path, bundle_dir);
    assert!(!preview.grants[0].write);
    assert_eq!(
        serde_json::to_value(&preview.grants[0].why).unwrap(),
        json!({"kind": "bundleFolder"})
    );

    // home, to write: refused until typed again
    c.values.insert("folder".into(), json!("~"));
    let e = rt.catalog_preview(&p.token, &c).unwrap_err();
    let CatalogError::Install(InstallError::Field(e)) = e else {
        panic!("{e}")
    };
    assert_eq!(e.field, "confirmWrite");
    assert!(e.message.contains("log in"), "{}", e.message);
    c.confirm_write = vec!["~/Documents".into()];
    assert!(rt.catalog_preview(&p.token, &c).is_err());
    c.confirm_write = vec!["~".into()];
    let preview = rt.catalog_preview(&p.token, &c).unwrap();
    let granted = preview
        .grants
        .iter()
        .find(|g| g.write)
        .expect("home, to write");
    assert_eq!(Path::new(&granted.path), home);
    assert!(granted.means.as_deref().unwrap().contains("log in"));
    assert_eq!(
        preview.sandbox.unwrap().write,
        std::slice::from_ref(&granted.path)
    );
}
