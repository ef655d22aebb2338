//! The environment a sandboxed server starts with: an allow-list of the host's variables, the
//! names the user granted, its private folders for temporary files and caches, then its own
//! configured environment. Nothing else of the host's reaches it: not the session bus's or an
//! ssh-agent's address, not the display, not a keyring's.

use std::ffi::OsString;

use super::*;

/// The host's variables every sandboxed server gets (`LC_*` too).
pub const ENV_ALLOWED: &[&str] = &["PATH", "HOME", "LANG", "LANGUAGE", "TZ"];

/// What a built-in server also gets: where the app's data is, so that its own folder (the `files`
/// server's, the `research` cache), which it finds from there, is the one the host granted.
pub const BUILTIN_ALLOWED: &[&str] = &["XDG_DATA_HOME"];

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
/// [`ENV_ALLOWED`], `LC_*`, the names in `granted` (its config's `sandbox.env`), and for a
/// built-in server the app's own `SWITCHBOARD_*` and [`BUILTIN_ALLOWED`]; then its `TMPDIR` and caches in `private`,
/// and without `network` the launchers' offline settings. Its configured environment goes over
/// this (the caller adds it).
pub fn environment(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    granted: &[String],
    builtin: bool,
    network: bool,
    private: &Path,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = inherited
        .into_iter()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            ENV_ALLOWED.contains(&k.as_ref())
                || k.starts_with("LC_")
                || granted.iter().any(|g| *g == k)
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
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let private = Path::new("/c/srv");
        let env = |granted: &[String], builtin| {
            environment(host.clone(), granted, builtin, false, private)
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
        let online: Vec<OsString> = environment(host.clone(), &[], false, true, private)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(
            !online.contains(&"npm_config_offline".into())
                && !online.contains(&"UV_OFFLINE".into())
        );
        // granted by name; the built-ins get the app's own settings
        let granted = env(&["SSH_AUTH_SOCK".into()], false);
        assert_eq!(granted["SSH_AUTH_SOCK"], "/run/user/1000/ssh");
        assert!(!granted.contains_key("DISPLAY"));
        assert_eq!(env(&[], true)["SWITCHBOARD_ARXIV_URL"], "http://x");
        // and where the app's data is, so their own folder is the one the host granted
        assert_eq!(env(&[], true)["XDG_DATA_HOME"], "/home/u/data");
    }
}
