//! npm packages built in the tests (a `package/` folder packed with the system's `tar`) and
//! served by the registry stand-in (`registry.rs`, bound to port 0 on loopback) as an npm
//! registry: each package's document at `<base>NAME`, its tarball at
//! `<base>NAME/-/NAME-VERSION.tgz`, with its sha512 integrity, as the npm registry has them.

use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha512};

use super::registry::Registry;

/// The npm registry address the stand-in serves packages at (`--registry=` for npm and npx).
pub fn npm_base(reg: &Registry) -> String {
    format!("{}/files/npm/", reg.url)
}

/// The tarball of a package: `package/package.json` (its name and version, and `manifest`'s
/// fields) and `files` (path in the package, text; `bin/` ones executable).
pub fn tarball(name: &str, version: &str, manifest: &Value, files: &[(&str, String)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("package");
    std::fs::create_dir_all(&pkg).unwrap();
    let mut doc = json!({"name": name, "version": version});
    for (k, v) in manifest.as_object().into_iter().flatten() {
        doc[k] = v.clone();
    }
    std::fs::write(pkg.join("package.json"), doc.to_string()).unwrap();
    for (path, text) in files {
        let p = pkg.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = std::process::Command::new("tar")
        .args(["-czf", "-", "-C"])
        .arg(dir.path())
        .arg("package")
        .output()
        .unwrap();
    assert!(out.status.success(), "tar: {out:?}");
    out.stdout
}

/// The address of a tarball served as `name`'s, at the registry's usual place for it.
pub fn tarball_url(reg: &Registry, name: &str, version: &str) -> String {
    format!("{}{name}/-/{name}-{version}.tgz", npm_base(reg))
}

/// Serves `bytes` as `name@version`'s tarball (without a document: a tarball URL to depend on).
pub fn serve_tarball(reg: &Registry, name: &str, version: &str, bytes: Vec<u8>) -> String {
    reg.add_file(
        &format!("npm/{name}/-/{name}-{version}.tgz"),
        bytes,
        "application/octet-stream",
    )
}

/// Publishes `name@version` (one version, `latest`): its tarball and its document, whose
/// version entry has `manifest`'s fields (dependencies, bin, scripts) as the tarball's
/// package.json does.
pub fn publish(
    reg: &Registry,
    name: &str,
    version: &str,
    manifest: Value,
    files: &[(&str, String)],
) {
    let bytes = tarball(name, version, &manifest, files);
    let integrity = format!(
        "sha512-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha512::digest(&bytes))
    );
    let tarball = serve_tarball(reg, name, version, bytes);
    let mut entry = json!({
        "name": name, "version": version,
        "dist": {"tarball": tarball, "integrity": integrity}
    });
    for (k, v) in manifest.as_object().into_iter().flatten() {
        entry[k] = v.clone();
    }
    let doc = json!({
        "name": name,
        "dist-tags": {"latest": version},
        "versions": {version: entry}
    });
    reg.add_file(
        &format!("npm/{name}"),
        doc.to_string().into_bytes(),
        "application/json",
    );
}

/// The tiny MCP server (`bundles::tiny_server_js`) as an npm package with a bin of its name,
/// as npx runs it.
pub fn publish_tiny_server(reg: &Registry, name: &str, version: &str, dependencies: Value) {
    let js = format!(
        "#!/usr/bin/env node\n{}",
        super::bundles::tiny_server_js(&super::bundles::tiny_tools(&[]))
    );
    publish(
        reg,
        name,
        version,
        json!({"bin": {name: "index.js"}, "dependencies": dependencies}),
        &[("index.js", js)],
    );
}

/// A git repository at `dir` holding a package whose `prepare` script (which npm 10 and older
/// run while packing a git dependency) would write `proof`.
pub fn git_package(dir: &Path, name: &str, proof: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let manifest = json!({
        "name": name, "version": "1.0.0",
        "scripts": {"prepare": format!("echo ran > '{}'", proof.display())}
    });
    std::fs::write(dir.join("package.json"), manifest.to_string()).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-qm", "a package with a prepare script"]);
}
