//! The options of a `docker run` (or podman) command line, each read as docker reads it and
//! checked: nothing that widens what the container reaches beyond its own filesystem, the
//! folders its sandbox grants and the network the user allows. Used by the registry's install
//! (before a container entry is saved) and by the sandbox (before each start); it lives here,
//! below both, so neither names the other.

use std::path::{Path, PathBuf};

/// The folders a container may mount from this computer: those its sandbox lets it write
/// (mounted as they are) and those it may only read (mounted read-only).
#[derive(Debug, Clone, Copy)]
pub struct Mountable<'a> {
    pub write: &'a [PathBuf],
    pub read: &'a [PathBuf],
}

/// Why a container's runtime arguments (`docker run` options before the image, values filled)
/// are refused: an option that widens what the container reaches beyond its own filesystem and
/// the network the user allows, named. `mountable`: the folders it may mount (`None`: its
/// mounts are not checked, the values being unknown yet).
pub fn container_refusal(args: &[String], mountable: Option<Mountable>) -> Option<String> {
    walk_options(args, mountable, false).err()
}

/// Where the image is in `docker run`'s arguments (after `run`: its options, then the image,
/// then the container's own arguments), once every option before it passed the checks of
/// [`container_refusal`]; or why they do not.
pub fn container_image_at(args: &[String], mountable: Mountable) -> Result<usize, String> {
    match walk_options(args, Some(mountable), true)? {
        Some(at) => Ok(at),
        None => Err("its docker run arguments name no image".into()),
    }
}

/// The options of `args`, each checked; the first word that is not an option is the image: its
/// index with `to_image`, else a refusal.
fn walk_options(
    args: &[String],
    mountable: Option<Mountable>,
    to_image: bool,
) -> Result<Option<usize>, String> {
    /// `docker run` short options that take a value.
    const SHORT_VALUE: &str = "aceh lmpuvw";
    let refused = |arg: &str, why: &str| Err(format!("its runtime argument \"{arg}\" {why}"));
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        // each option of the word, with its value (inline, or the next word)
        let mut options: Vec<(String, Option<String>)> = Vec::new();
        if let Some(long) = arg.strip_prefix("--") {
            match long.split_once('=') {
                Some((f, v)) => options.push((format!("--{f}"), Some(v.to_string()))),
                None => options.push((arg.clone(), None)),
            }
        } else if let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            for (at, c) in shorts.char_indices() {
                if SHORT_VALUE.contains(c) && c != ' ' {
                    let rest = shorts[at + c.len_utf8()..].trim_start_matches('=');
                    let value = (!rest.is_empty()).then(|| rest.to_string());
                    options.push((format!("-{c}"), value));
                    break;
                }
                options.push((format!("-{c}"), None));
            }
        } else if to_image {
            return Ok(Some(i - 1));
        } else {
            return refused(
                arg,
                "is not an option: docker would take it for the image to run",
            );
        }
        for (flag, inline) in options {
            // docker run's options that take no value; any other takes one (the next word
            // when not given with `=`), but never a word that is an option itself: that is
            // checked as one
            let takes_value = !matches!(
                flag.as_str(),
                "-d" | "-i"
                    | "-t"
                    | "-P"
                    | "-q"
                    | "--rm"
                    | "--init"
                    | "--read-only"
                    | "--privileged"
                    | "--publish-all"
                    | "--interactive"
                    | "--tty"
                    | "--detach"
                    | "--quiet"
                    | "--oom-kill-disable"
                    | "--no-healthcheck"
                    | "--sig-proxy"
                    | "--disable-content-trust"
                    | "--use-api-socket"
            ) && flag.len() > 1;
            let mut value = || -> String {
                match &inline {
                    Some(v) => v.clone(),
                    None if takes_value && i < args.len() && !args[i].starts_with('-') => {
                        i += 1;
                        args[i - 1].clone()
                    }
                    None => String::new(),
                }
            };
            // the option as written, with its value when that is the next word
            let said = |v: &str| match &inline {
                None if !v.is_empty() => format!("{arg} {v}"),
                _ => arg.clone(),
            };
            match flag.as_str() {
                "--privileged" if inline.as_deref() != Some("false") => {
                    return refused(arg, "gives the container every privilege of the computer")
                }
                "--network" | "--net" => {
                    let v = value();
                    if v != "none" {
                        return refused(
                            &said(&v),
                            "chooses its network (only --network=none is taken: the network is \
                             the user's to allow)",
                        );
                    }
                }
                "--pid" | "--ipc" | "--uts" | "--userns" | "--cgroupns" => {
                    let v = value();
                    if v == "host" || v.starts_with("container:") {
                        return refused(
                            &said(&v),
                            "shares the computer's (or another container's) processes or namespaces",
                        );
                    }
                }
                "--cap-add"
                | "--device"
                | "--device-cgroup-rule"
                | "--gpus"
                | "--security-opt"
                | "--group-add"
                | "--sysctl"
                | "--volumes-from"
                | "--env-file"
                | "--cgroup-parent"
                | "--runtime"
                | "--link"
                | "-p"
                | "--publish"
                | "-P"
                | "--publish-all"
                | "--oom-kill-disable"
                | "--ulimit"
                | "--use-api-socket"
                | "--volume-driver" => {
                    return refused(arg, "widens what the container may reach or do")
                }
                "-u" | "--user" => {
                    let v = value();
                    if v.split(':').any(|part| part == "0" || part == "root") {
                        return refused(&said(&v), "runs it as root");
                    }
                }
                "-v" | "--volume" => {
                    let v = value();
                    if let Some(why) = mountable.and_then(|m| volume_refusal(&v, m)) {
                        return refused(&said(&v), &why);
                    }
                }
                "--mount" => {
                    let v = value();
                    if let Some(why) = mountable.and_then(|m| mount_refusal(&v, m)) {
                        return refused(&said(&v), &why);
                    }
                }
                _ => {
                    // any other option: its value (if it has one) is not checked, but taken
                    // off so it is not read as an option of its own
                    let _ = value();
                }
            }
        }
    }
    Ok(None)
}

/// Whether `host` (a bind mount's source on this computer) may be mounted, read-only or not.
fn mount_source(host: &str, read_only: bool, m: Mountable) -> Option<String> {
    let p = Path::new(host);
    if !p.is_absolute() || p.components().any(|c| c == std::path::Component::ParentDir) {
        return Some(format!(
            "mounts \"{host}\", which is not a full path of a folder you gave it"
        ));
    }
    // Docker mounts what a link leads to
    let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let inside = |list: &[PathBuf]| list.iter().any(|g| real.starts_with(g));
    if inside(m.write) || (read_only && inside(m.read)) {
        return None;
    }
    if inside(m.read) {
        return Some(format!(
            "mounts {host} to change, which you gave it to read only (add :ro)"
        ));
    }
    Some(format!(
        "mounts {host}, a folder of this computer you did not give it"
    ))
}

/// `-v SRC:DST[:OPTS]`: a folder of this computer, or a named volume (refused: it outlives the
/// container and others can mount it); `-v DST` alone is the container's own.
fn volume_refusal(v: &str, m: Mountable) -> Option<String> {
    let mut parts = v.split(':');
    let (src, _dst, opts) = (parts.next()?, parts.next(), parts.next().unwrap_or(""));
    _dst?;
    if !src.starts_with('/') && !src.starts_with('.') && !src.starts_with('~') {
        return Some(format!("mounts the named volume \"{src}\""));
    }
    let read_only = opts.split(',').any(|o| o == "ro" || o == "readonly");
    mount_source(src, read_only, m)
}

/// `--mount type=…,source=…,…`: a bind mount of a folder given to it, a tmpfs, or an anonymous
/// volume; with no key Switchboard does not know (a volume's `volume-opt` can bind any folder),
/// none twice, nothing quoted (docker reads the value as CSV).
fn mount_refusal(v: &str, m: Mountable) -> Option<String> {
    if v.contains(['"', '\'', '\n']) {
        return Some("mounts with quoted fields".into());
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut kind = "volume";
    let (mut source, mut read_only) = (None, false);
    for part in v.split(',') {
        let (k, val) = part.split_once('=').unwrap_or((part, ""));
        let k = match k {
            "src" => "source",
            "dst" | "destination" => "target",
            "ro" => "readonly",
            other => other,
        };
        if seen.contains(&k) {
            return Some(format!("names its mount's {k} twice"));
        }
        seen.push(k);
        match k {
            "type" => kind = val,
            "source" => source = Some(val),
            "readonly" => read_only = val.is_empty() || val == "true" || val == "1",
            "target" | "consistency" | "volume-nocopy" | "tmpfs-size" | "tmpfs-mode" => {}
            other => return Some(format!("mounts with the option \"{other}\"")),
        }
    }
    match (kind, source) {
        ("bind", Some(src)) => mount_source(src, read_only, m),
        ("bind", None) => Some("mounts a folder it does not name".into()),
        ("tmpfs", None) | ("volume", None) => None,
        ("volume", Some(src)) => Some(format!("mounts the named volume \"{src}\"")),
        (other, _) => Some(format!("mounts a {other}")),
    }
}
