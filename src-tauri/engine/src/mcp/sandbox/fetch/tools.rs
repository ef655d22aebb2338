//! The programs a fetch runs outside the sandbox, and the PATH it runs them with: the app's own.
//! A server must never choose what the host runs, and a server can write its private folder, its
//! write grants and sometimes folders on the PATH it was given (its config's, or a folder of the
//! app's PATH it may write). So the package manager (`npm`, `uv`) and the interpreter it starts by
//! name (`node`, `python3`) are looked up on the app's PATH only (the login shell's, as the host
//! resolved it), in folders the server cannot write, each checked again where its link leads;
//! and the manager runs with a PATH of those programs' folders and the system's folders alone.

use std::path::{Path, PathBuf};

/// System folders of programs, after the programs' own on the PATH a fetch runs with (`env`,
/// `sh`): owned by root on every system this runs on.
const SYSTEM_BIN: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// The programs of one fetch.
#[derive(Debug, Clone, PartialEq)]
pub struct Tools {
    /// The package manager, as found on the app's PATH.
    pub manager: PathBuf,
    /// The interpreter it starts by name, as found (`node` for npm; for uv, a `python3` when
    /// there is one).
    pub interpreter: Option<PathBuf>,
    /// The PATH it runs with: the folders of the two, then the system's.
    pub path: String,
}

/// What a fetch needs: a package manager and the interpreter it starts by name.
#[derive(Debug, Clone, Copy)]
pub struct Wants {
    pub manager: &'static str,
    /// Names of the interpreter, the first found is taken.
    pub interpreter: &'static [&'static str],
    /// Whether the manager cannot work without it (npm is a Node program; uv can use the
    /// interpreters it installed itself).
    pub interpreter_needed: bool,
}

/// Whether `p` is `w` or inside it, for any `w` of `writable`.
fn inside_any(p: &Path, writable: &[PathBuf]) -> bool {
    writable.iter().any(|w| p.starts_with(w))
}

/// Whether the server cannot write `p`: neither it as named nor where its links lead is in
/// `writable` (which holds each place as named and as resolved).
pub fn out_of_reach(p: &Path, writable: &[PathBuf]) -> bool {
    if !p.is_absolute() || inside_any(p, writable) {
        return false;
    }
    match p.canonicalize() {
        Ok(real) => !inside_any(&real, writable),
        // it does not exist: nothing runs from it
        Err(_) => true,
    }
}

/// `writable`, each as named and as resolved (a place reached through a link counts too).
pub fn with_resolved(writable: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for w in writable {
        for p in std::iter::once(w.clone()).chain(w.canonicalize().ok()) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The first of `names` in the first of `dirs` that has one.
fn first_in(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| executable(p))
}

/// Finds `wants` on `app_path` (the app's PATH; `None`: this process's own) outside `writable`
/// (what the server may write: as named; resolved here), and the PATH to run them with. The
/// error says what is missing, or which program lies where the server could have put it.
pub fn find(wants: Wants, app_path: Option<&str>, writable: &[PathBuf]) -> Result<Tools, String> {
    let writable = with_resolved(writable);
    let app = app_path
        .map(String::from)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for entry in app.split(':') {
        let d = PathBuf::from(entry);
        // a relative entry means the folder it runs in: never
        if d.is_absolute() && out_of_reach(&d, &writable) && !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    let manager = first_in(&dirs, &[wants.manager]).ok_or_else(|| {
        format!(
            "{} was not found on the app's PATH (outside the folders this server may write), \
             and the host runs only its own {} to fetch a package",
            wants.manager, wants.manager
        )
    })?;
    let leads_away = |p: &Path| {
        format!(
            "{} leads into a folder this server may write, so the host does not run it",
            p.display()
        )
    };
    if !out_of_reach(&manager, &writable) {
        return Err(leads_away(&manager));
    }
    let manager_dir = manager.parent().map(Path::to_path_buf).unwrap_or_default();
    // beside the manager first (as `env` will find it), then on the app's PATH
    let mut search = vec![manager_dir.clone()];
    search.extend(dirs.iter().cloned());
    let interpreter = first_in(&search, wants.interpreter);
    if interpreter.is_none() && wants.interpreter_needed {
        return Err(format!(
            "{} was not found on the app's PATH (outside the folders this server may write), \
             and {} needs it",
            wants.interpreter.join(" or "),
            wants.manager
        ));
    }
    let mut run: Vec<PathBuf> = vec![manager_dir];
    if let Some(d) = interpreter.as_ref().and_then(|i| i.parent()) {
        run.push(d.to_path_buf());
    }
    for s in SYSTEM_BIN {
        let s = PathBuf::from(s);
        if s.is_dir() && out_of_reach(&s, &writable) {
            run.push(s);
        }
    }
    let mut unique = Vec::new();
    for d in run {
        if !unique.contains(&d) {
            unique.push(d);
        }
    }
    // whatever the manager starts by name comes from that PATH: each checked where it leads
    let chosen: Vec<PathBuf> = std::iter::once(manager.clone())
        .chain(
            wants
                .interpreter
                .iter()
                .filter_map(|n| first_in(&unique, &[n])),
        )
        .collect();
    if let Some(bad) = chosen.iter().find(|p| !out_of_reach(p, &writable)) {
        return Err(leads_away(bad));
    }
    let path = unique
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    Ok(Tools {
        manager,
        interpreter,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn program(dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    const NPM: Wants = Wants {
        manager: "npm",
        interpreter: &["node"],
        interpreter_needed: true,
    };

    #[test]
    fn the_programs_come_from_the_apps_path_never_from_where_the_server_writes() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let (planted, real, private) = (root.join("w"), root.join("real"), root.join("private"));
        program(&planted, "npm");
        program(&planted, "node");
        program(&private.join("bin"), "npm");
        let npm = program(&real, "npm");
        let node = program(&real, "node");
        let app = format!(
            "rel/bin:{}:{}:{}",
            private.join("bin").display(),
            planted.display(),
            real.display()
        );
        let writable = vec![planted.clone(), private.clone()];
        let tools = find(NPM, Some(&app), &writable).unwrap();
        assert_eq!(tools.manager, npm);
        assert_eq!(tools.interpreter, Some(node));
        let path: Vec<&str> = tools.path.split(':').collect();
        assert_eq!(path[0], real.display().to_string());
        assert!(!tools.path.contains(&planted.display().to_string()));
        assert!(!tools.path.contains("rel/bin"));
        assert!(path.iter().all(|d| Path::new(d).is_absolute()));

        // nothing else: refused, saying why
        let only_planted = planted.display().to_string();
        let e = find(NPM, Some(&only_planted), &writable).unwrap_err();
        assert!(e.contains("npm was not found on the app's PATH"), "{e}");

        // a folder of the app's PATH that is a link into a writable one counts as writable
        let link = root.join("link");
        std::os::unix::fs::symlink(&planted, &link).unwrap();
        let via_link = format!("{}:{}", link.display(), real.display());
        assert_eq!(find(NPM, Some(&via_link), &writable).unwrap().manager, npm);

        // a program that is a link into a writable folder is not run
        let sneaky = root.join("sneaky");
        std::fs::create_dir_all(&sneaky).unwrap();
        std::os::unix::fs::symlink(planted.join("npm"), sneaky.join("npm")).unwrap();
        let e = find(NPM, Some(&sneaky.display().to_string()), &writable).unwrap_err();
        assert!(
            e.contains("leads into a folder this server may write"),
            "{e}"
        );

        // npm without node beside it or on the PATH
        let lonely = root.join("lonely");
        program(&lonely, "npm");
        let e = find(NPM, Some(&lonely.display().to_string()), &writable).unwrap_err();
        assert!(e.contains("node was not found"), "{e}");
    }

    #[test]
    fn a_writable_folder_above_takes_what_is_below() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        program(&root.join("a/bin"), "npm");
        program(&root.join("a/bin"), "node");
        let app = root.join("a/bin").display().to_string();
        assert!(find(NPM, Some(&app), &[root.join("a")]).is_err());
        assert!(find(NPM, Some(&app), &[PathBuf::from("/")]).is_err());
        assert!(find(NPM, Some(&app), &[root.join("b")]).is_ok());
    }
}
