//! What a sandbox never grants by itself: credentials under home and the app's own folders. A
//! grant that holds one (a script's folder, the `cwd`, a folder the user listed such as `~`) is
//! split around it: the grant's entries are granted one by one, those that hold a protected
//! path split again, and the protected path itself is left out (Landlock only adds rights, so a
//! folder cannot be granted "but for" something inside). A protected path is granted only when
//! the config names it, or something inside it, itself: a link to it is not its name. The
//! entries of a split grant are granted without their links (Landlock grants what a path leads
//! to, so a link `~/keys → ~/.ssh` in a granted folder would grant `~/.ssh`).

use super::*;

/// Under home: what people keep secrets in, never readable unless named. Credentials and keys;
/// the shells' and REPLs' histories (commands typed with passwords in them); browser, mail and
/// chat profiles (cookies, saved passwords, tokens); password managers; cloud, registry and
/// build tools' logins. Add what a new tool keeps its login in here.
pub const CREDENTIALS: &[&str] = &[
    // keys and logins
    ".ssh",
    ".gnupg",
    ".pki",
    ".netrc",
    ".pgpass",
    ".my.cnf",
    ".Xauthority",
    ".ICEauthority",
    ".local/share/keyrings",
    ".gnome2/keyrings",
    ".password-store",
    ".config/Bitwarden",
    ".config/Bitwarden CLI",
    ".config/1Password",
    ".1password",
    ".config/keepassxc",
    ".local/share/KeePassXC",
    ".config/op",
    ".vault-token",
    // cloud and infrastructure
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/doctl",
    ".config/hcloud",
    ".oci",
    ".kube",
    ".terraform.d/credentials.tfrc.json",
    ".terraformrc",
    ".boto",
    ".s3cfg",
    ".config/rclone",
    ".config/heroku",
    ".fly",
    ".config/netlify",
    ".vercel",
    ".wrangler",
    // package registries and build tools
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".config/pip",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".local/share/uv/credentials",
    ".config/uv",
    ".rye/credentials",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".nuget/NuGet/NuGet.Config",
    ".config/NuGet/NuGet.Config",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".docker/config.json",
    ".config/containers/auth.json",
    // source hosting
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".config/tea",
    // histories
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
    ".config/fish/fish_history",
    ".local/share/atuin",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".irb_history",
    ".lesshst",
    ".wget-hsts",
    ".ipython/profile_default/history.sqlite",
    // browsers
    ".mozilla",
    ".librewolf",
    ".waterfox",
    "snap/firefox",
    ".var/app/org.mozilla.firefox",
    ".config/google-chrome",
    ".config/google-chrome-beta",
    ".config/google-chrome-unstable",
    ".config/chromium",
    ".var/app/org.chromium.Chromium",
    "snap/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    ".config/epiphany",
    ".local/share/epiphany",
    ".config/qutebrowser",
    ".local/share/qutebrowser",
    // mail and chat
    ".thunderbird",
    ".var/app/org.mozilla.Thunderbird",
    "snap/thunderbird",
    ".local/share/evolution",
    ".config/evolution",
    ".mutt",
    ".muttrc",
    ".msmtprc",
    ".mbsyncrc",
    ".fetchmailrc",
    ".offlineimaprc",
    ".config/aerc",
    ".config/Signal",
    ".config/Slack",
    ".config/discord",
    ".config/Element",
    ".local/share/TelegramDesktop",
    // wallets
    ".bitcoin",
    ".electrum",
    ".ethereum",
    ".config/Exodus",
];

/// System files that hold secrets: unreadable to a user anyway, but a server run by root (whose
/// capabilities are dropped, but not its user) would read them through the system folders it
/// may read.
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/security/opasswd",
    "/etc/ssl/private",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssh/ssh_host_ecdsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_dsa_key",
    "/etc/krb5.keytab",
    "/etc/NetworkManager/system-connections",
    "/etc/wpa_supplicant",
    "/etc/libvirt/secrets",
];

/// Run by root, a server (whose capabilities are dropped, not its user) would read every file
/// of `/etc` only root may read: those are protected too (files not readable by others, and
/// folders not searchable by others), however they are named. Nothing for another user, who
/// cannot read them anyway. Read once per run (a walk of `/etc`, ~1,000 entries, would
/// otherwise be paid at each server's start).
fn root_only() -> Vec<PathBuf> {
    static ONCE: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    ONCE.get_or_init(read_root_only).clone()
}

fn read_root_only() -> Vec<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if unsafe { libc::geteuid() } != 0 {
            return vec![];
        }
        let mut out = Vec::new();
        let mut stack = vec![(PathBuf::from("/etc"), 0)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let Ok(meta) = e.path().symlink_metadata() else {
                    continue;
                };
                if meta.file_type().is_symlink() {
                    continue;
                }
                let others = meta.mode() & 0o007;
                if meta.is_dir() {
                    if others & 0o001 == 0 {
                        out.push(e.path());
                    } else if depth < 6 {
                        stack.push((e.path(), depth + 1));
                    }
                } else if others & 0o004 == 0 {
                    out.push(e.path());
                }
            }
        }
        out
    }
    #[cfg(not(unix))]
    {
        vec![]
    }
}

/// The protected paths: [`CREDENTIALS`] under `home`, [`SYSTEM_SECRETS`] (and, run by root,
/// what only root may read in `/etc`), and `app` (the app's config, data and
/// cache folders). Each as written and, when it exists, as resolved (a `~/.ssh` that is a
/// symlink into a dotfiles folder is protected there too).
pub fn protected(home: Option<&Path>, app: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let listed = home
        .into_iter()
        .flat_map(|h| CREDENTIALS.iter().map(move |c| h.join(c)))
        .chain(SYSTEM_SECRETS.iter().map(PathBuf::from))
        .chain(root_only())
        .chain(app.iter().cloned());
    for p in listed {
        if let Ok(real) = p.canonicalize() {
            if !out.contains(&real) {
                out.push(real);
            }
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// `grant` as it may be granted: itself when no protected path is in it; its entries, split
/// again where one holds a protected path, when one is; nothing when it is itself protected
/// (or inside a protected folder), unless `named` (the config names it). What was left out
/// goes to `left_out`.
pub fn split_around(
    grant: &Path,
    protected: &[PathBuf],
    named: bool,
    out: &mut Vec<PathBuf>,
    left_out: &mut Vec<PathBuf>,
) {
    if protected.iter().any(|p| grant.starts_with(p)) {
        if named {
            push(out, grant);
        } else {
            push(left_out, grant);
        }
        return;
    }
    let inside: Vec<&PathBuf> = protected
        .iter()
        .filter(|p| p.starts_with(grant) && p.as_path() != grant)
        .collect();
    if inside.is_empty() {
        push(out, grant);
        return;
    }
    let Ok(entries) = std::fs::read_dir(grant) else {
        // a file, or a folder that cannot be listed: nothing of it can be granted safely
        push(left_out, grant);
        return;
    };
    for e in entries.flatten() {
        let child = e.path();
        // a link among the entries is never granted: its target would be (`~/keys → ~/.ssh`),
        // and the target is reachable only when it is granted itself
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            push(left_out, &child);
            continue;
        }
        if protected.iter().any(|p| child.starts_with(p)) {
            push(left_out, &child);
        } else if inside.iter().any(|p| p.starts_with(&child)) {
            split_around(&child, protected, false, out, left_out);
        } else {
            push(out, &child);
        }
    }
}

fn push(list: &mut Vec<PathBuf>, p: &Path) {
    if !list.iter().any(|x| x == p) {
        list.push(p.to_path_buf());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_that_holds_a_credential_is_split_around_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        for d in [
            ".ssh",
            ".config/gh",
            ".config/editor",
            "notes",
            ".local/share/app",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".netrc"), "machine x password y").unwrap();
        std::fs::write(home.join("todo.txt"), "x").unwrap();
        let app = home.join(".local/share/app");
        let protected = protected(Some(&home), std::slice::from_ref(&app));
        let (mut out, mut left) = (Vec::new(), Vec::new());
        split_around(&home, &protected, true, &mut out, &mut left);
        out.sort();
        let rel: Vec<String> = out
            .iter()
            .map(|p| p.strip_prefix(&home).unwrap().display().to_string())
            .collect();
        // everything of home but the credentials and the app's folder, entry by entry
        assert_eq!(
            rel,
            vec![".config/editor", "notes", "todo.txt"],
            "left out: {left:?}"
        );
        for p in [".ssh", ".netrc", ".config/gh", ".local/share/app"] {
            assert!(left.contains(&home.join(p)), "{p} in {left:?}");
        }
        // named itself: granted; found inside another grant: never
        let (mut out, mut left) = (Vec::new(), Vec::new());
        split_around(&home.join(".ssh"), &protected, true, &mut out, &mut left);
        assert_eq!(out, vec![home.join(".ssh")]);
        let (mut out, mut left2) = (Vec::new(), Vec::new());
        split_around(&home.join(".ssh"), &protected, false, &mut out, &mut left2);
        assert!(out.is_empty() && left2 == vec![home.join(".ssh")]);
        // a folder with nothing protected in it stays one grant
        let (mut out, mut left) = (Vec::new(), Vec::new());
        split_around(&home.join("notes"), &protected, false, &mut out, &mut left);
        assert_eq!((out, left), (vec![home.join("notes")], vec![]));
    }

    #[test]
    fn a_credential_behind_a_symlink_is_protected_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let home = d.join("home");
        std::fs::create_dir_all(d.join("dotfiles/ssh")).unwrap();
        std::fs::create_dir_all(d.join("dotfiles/vimrc.d")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::os::unix::fs::symlink(d.join("dotfiles/ssh"), home.join(".ssh")).unwrap();
        let protected = protected(Some(&home), &[]);
        let (mut out, mut left) = (Vec::new(), Vec::new());
        split_around(&d.join("dotfiles"), &protected, true, &mut out, &mut left);
        assert_eq!(out, vec![d.join("dotfiles/vimrc.d")]);
        assert_eq!(left, vec![d.join("dotfiles/ssh")]);
    }
}
