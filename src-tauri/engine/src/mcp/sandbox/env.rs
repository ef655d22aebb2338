//! The environment a sandboxed server starts with: an allow-list of the host's variables, the
//! names the user granted, with any network the certificate settings TLS clients read
//! ([`is_cert_setting`]; the files they name are readable in its sandbox: `policy.rs`), its private
//! folders for temporary files and caches, then its own configured environment. Nothing else of
//! the host's reaches it: not the session bus's or an ssh-agent's address, not the display, not
//! a keyring's, not a proxy's (its address may hold a password: granted by name in `env`).

use std::ffi::OsString;

use super::*;

/// The host's variables every sandboxed server gets (`LC_*` too).
pub const ENV_ALLOWED: &[&str] = &["PATH", "HOME", "LANG", "LANGUAGE", "TZ"];

/// The certificate settings of TLS clients (OpenSSL, Python's requests and pip, Node.js, curl,
/// git, uv, Deno, gRPC, AWS's SDKs, Cargo, npm): a server with any network gets those the app
/// has, so it trusts what the user's machine trusts (a company proxy that re-signs TLS); the
/// files and folders the ones in [`CERT_PATHS`] name are readable in its sandbox. None of them
/// holds a secret: a certificate authority's certificate is public. These are the settings that
/// name none (switches, a store's name); [`is_cert_setting`] says whether a name is one of all.
pub const CERT_FLAGS: &[&str] = &[
    "NODE_USE_SYSTEM_CA",
    "UV_NATIVE_TLS",
    "UV_SYSTEM_CERTS",
    "DENO_TLS_CA_STORE",
];

/// Whether `name` is one of the certificate settings: [`CERT_PATHS`] or [`CERT_FLAGS`].
pub fn is_cert_setting(name: &str) -> bool {
    CERT_PATHS.contains(&name) || CERT_FLAGS.contains(&name)
}

/// The certificate settings that name a file or folder (`SSL_CERT_DIR` and `GIT_SSL_CAPATH` a
/// folder, or several separated by `:`), which the sandbox lets the server read.
pub const CERT_PATHS: &[&str] = &[
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "GIT_SSL_CAINFO",
    "GIT_SSL_CAPATH",
    "DENO_CERT",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
    "AWS_CA_BUNDLE",
    "CARGO_HTTP_CAINFO",
    "HTTPLIB2_CA_CERTS",
    "npm_config_cafile",
    "NPM_CONFIG_CAFILE",
    "NIX_SSL_CERT_FILE",
    "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
];

/// The files and folders the certificate settings in `vars` name ([`CERT_PATHS`]), as written:
/// absolute paths only (a relative one means nothing to a server that runs elsewhere).
pub fn cert_paths<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for (k, v) in vars {
        if !CERT_PATHS.contains(&k) {
            continue;
        }
        for part in v.split(':') {
            let p = Path::new(part.trim());
            if p.is_absolute() && !out.iter().any(|o| o == p) {
                out.push(p.to_path_buf());
            }
        }
    }
    out
}

/// What a built-in server also gets of the host's variables (its own folder is an argument the
/// host gives it, `servers::with_own_folder`, so nothing of where the app keeps its data).
pub const BUILTIN_ALLOWED: &[&str] = &[];

/// Launchers' cache settings pointed at the server's private folder (`<private>/cache/…`), so
/// npx, uvx, pip, pnpm, yarn or bun never write a cache another server runs code from.
/// `XDG_CACHE_HOME` covers uv, pip, pnpm's cache and deno.
const CACHES: &[(&str, &str)] = &[
    ("XDG_CACHE_HOME", ""),
    ("npm_config_cache", "npm"),
    ("npm_config_store_dir", "pnpm-store"),
    ("UV_CACHE_DIR", "uv"),
    // uvx keeps a lock in its tools folder even for a one-off run
    ("UV_TOOL_DIR", "uv-tools"),
    ("PIP_CACHE_DIR", "pip"),
    ("YARN_CACHE_FOLDER", "yarn"),
    ("BUN_INSTALL_CACHE_DIR", "bun"),
];

/// Launchers told to work from their cache alone, for a server without network: npx or uvx then runs
/// the package the host fetched for it ([`super::fetch`]), and any launcher says plainly that
/// it is offline rather than failing on a name lookup.
const OFFLINE: &[(&str, &str)] = &[("npm_config_offline", "true"), ("UV_OFFLINE", "1")];

/// The environment of a sandboxed server: of the host's variables (`inherited`), those in
/// [`ENV_ALLOWED`], `LC_*`, the names in `granted` (its config's `sandbox.env`), with any network
/// (`reaches`: all of it, or some hosts) the certificate settings ([`is_cert_setting`]), and for a
/// built-in server the app's own `SWITCHBOARD_*` and [`BUILTIN_ALLOWED`]; then its `TMPDIR` and
/// caches in `private`, and without `network` (all of it) the launchers' offline settings. Its
/// configured environment goes over this (the caller adds it).
pub fn environment(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    granted: &[String],
    builtin: bool,
    network: bool,
    reaches: bool,
    private: &Path,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            ENV_ALLOWED.contains(&k.as_ref())
                || k.starts_with("LC_")
                || granted.iter().any(|g| *g == k)
                || (reaches && is_cert_setting(k.as_ref()))
                || (builtin
                    && (k.starts_with("SWITCHBOARD_") || BUILTIN_ALLOWED.contains(&k.as_ref())))
        })
        .collect();
    out.push(("TMPDIR".into(), private.join("tmp").into()));
    let cache = private.join("cache");
    for (name, sub) in CACHES {
        let dir = if sub.is_empty() {
            cache.clone()
        } else {
            cache.join(sub)
        };
        out.push(((*name).into(), dir.into()));
    }
    if !network {
        out.extend(OFFLINE.iter().map(|(k, v)| ((*k).into(), (*v).into())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allowed_and_granted_names_pass() {
        let host: Vec<(OsString, OsString)> = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C.UTF-8"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
            ("SSH_AUTH_SOCK", "/run/user/1000/ssh"),
            ("DISPLAY", ":0"),
            ("WAYLAND_DISPLAY", "wayland-0"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("GNOME_KEYRING_CONTROL", "/run/user/1000/keyring"),
            ("GPG_AGENT_INFO", "x"),
            ("SWITCHBOARD_ARXIV_URL", "http://x"),
            ("XDG_DATA_HOME", "/home/u/data"),
            ("TMPDIR", "/tmp"),
            ("npm_config_cache", "/home/u/.npm"),
            ("SSL_CERT_FILE", "/corp/ca.pem"),
            ("NODE_EXTRA_CA_CERTS", "/corp/ca.pem"),
            ("UV_NATIVE_TLS", "1"),
            ("HTTPS_PROXY", "http://user:pw@proxy:3128"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let private = Path::new("/c/srv");
        let env = |granted: &[String], builtin| {
            environment(host.clone(), granted, builtin, false, false, private)
                .into_iter()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.to_string_lossy().into_owned(),
                    )
                })
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let plain = env(&[], false);
        let names: Vec<&str> = plain.keys().map(String::as_str).collect();
        for n in ["PATH", "HOME", "LC_ALL", "TMPDIR", "XDG_CACHE_HOME"] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        for n in [
            "DBUS_SESSION_BUS_ADDRESS",
            "SSH_AUTH_SOCK",
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "XDG_RUNTIME_DIR",
            "GNOME_KEYRING_CONTROL",
            "GPG_AGENT_INFO",
            "SWITCHBOARD_ARXIV_URL",
            "XDG_DATA_HOME",
        ] {
            assert!(!names.contains(&n), "{n} in {names:?}");
        }
        // its temporary files and caches are its own, whatever the host's say
        assert_eq!(plain["TMPDIR"], "/c/srv/tmp");
        assert_eq!(plain["npm_config_cache"], "/c/srv/cache/npm");
        assert_eq!(plain["XDG_CACHE_HOME"], "/c/srv/cache");
        // no network: the launchers work from their caches
        assert_eq!(plain["npm_config_offline"], "true");
        assert_eq!(plain["UV_OFFLINE"], "1");
        let online: Vec<OsString> = environment(host.clone(), &[], false, true, true, private)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(
            !online.contains(&"npm_config_offline".into())
                && !online.contains(&"UV_OFFLINE".into())
        );
        // the certificate settings only with some network: all of it, or some hosts
        for n in ["SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "UV_NATIVE_TLS"] {
            assert!(!names.contains(&n), "{n} without network");
        }
        for (network, reaches) in [(true, true), (false, true)] {
            let with: std::collections::BTreeMap<String, String> =
                environment(host.clone(), &[], false, network, reaches, private)
                    .into_iter()
                    .map(|(k, v)| {
                        (
                            k.to_string_lossy().into_owned(),
                            v.to_string_lossy().into_owned(),
                        )
                    })
                    .collect();
            assert_eq!(with["SSL_CERT_FILE"], "/corp/ca.pem");
            assert_eq!(with["NODE_EXTRA_CA_CERTS"], "/corp/ca.pem");
            assert_eq!(with["UV_NATIVE_TLS"], "1");
            // a proxy's address (it may hold a password) only by name
            assert!(!with.contains_key("HTTPS_PROXY"));
            // some hosts only: the launchers stay offline
            assert_eq!(with.contains_key("UV_OFFLINE"), !network);
        }
        // granted by name; the built-ins get the app's own settings
        let granted = env(&["SSH_AUTH_SOCK".into()], false);
        assert_eq!(granted["SSH_AUTH_SOCK"], "/run/user/1000/ssh");
        assert!(!granted.contains_key("DISPLAY"));
        assert_eq!(env(&[], true)["SWITCHBOARD_ARXIV_URL"], "http://x");
        // but not where the app keeps its data: their own folder is an argument
        assert!(!env(&[], true).contains_key("XDG_DATA_HOME"));
    }

    #[test]
    fn the_certificate_settings_name_files_and_folders() {
        let got = cert_paths([
            ("SSL_CERT_FILE", "/corp/ca.pem"),
            ("SSL_CERT_DIR", "/etc/ssl/certs:/corp/certs"),
            ("NODE_EXTRA_CA_CERTS", "/corp/ca.pem"),
            ("UV_NATIVE_TLS", "/not/a/path/setting"),
            ("PIP_CERT", "relative.pem"),
            ("HOME", "/home/u"),
        ]);
        assert_eq!(
            got,
            ["/corp/ca.pem", "/etc/ssl/certs", "/corp/certs"]
                .map(PathBuf::from)
                .to_vec()
        );
    }
}
