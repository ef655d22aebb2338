//! Waiting for a stdio server's start while it shows signs of life: a first start that installs
//! its package (npx, uvx fetching and unpacking for half a minute) is not killed for being slow,
//! only one that is silent. Signs of life are its process group's work: the bytes its processes
//! read and write (files, the network, pipes: `/proc/PID/io`) and their CPU time.

use std::future::Future;
use std::time::{Duration, Instant};

/// The most a start may take however busy it is.
pub const MOST: Duration = Duration::from_secs(600);

/// How long a start is quiet before it is said on its row.
const SAY_AFTER: Duration = Duration::from_secs(2);

/// Waits for `work`; gives up when the process group `pid` has done nothing for `silent` (or
/// after [`MOST`]). While it waits past a moment, `note` hears for how long it has been busy.
/// `Err(busy)`: it gave up, and whether the group was still busy (then [`MOST`] ran out).
pub async fn while_busy<F: Future>(
    work: F,
    pid: Option<u32>,
    silent: Duration,
    note: &(dyn Fn(Option<Duration>) + Send + Sync),
) -> Result<F::Output, bool> {
    let Some(pid) = pid else {
        return tokio::time::timeout(silent, work).await.map_err(|_| false);
    };
    tokio::pin!(work);
    let started = Instant::now();
    let mut last = activity(pid);
    let mut quiet_since = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let out = loop {
        tokio::select! {
            done = &mut work => break Ok(done),
            _ = tick.tick() => {
                let now = activity(pid);
                if now != last {
                    last = now;
                    quiet_since = Instant::now();
                }
                if quiet_since.elapsed() >= silent {
                    break Err(false);
                }
                if started.elapsed() >= MOST {
                    break Err(true);
                }
                if started.elapsed() >= SAY_AFTER {
                    note(Some(started.elapsed()));
                }
            }
        }
    };
    note(None);
    out
}

/// What the processes of group `pgid` have done so far: bytes read and written, and CPU ticks.
fn activity(pgid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0u64;
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // after the command's name in parentheses: state, ppid, pgrp, … utime (14), stime (15)
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) != Some(pgid) {
            continue;
        }
        let tick = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        total += tick(11) + tick(12);
        if let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
            for line in io.lines() {
                if let Some(v) = line
                    .strip_prefix("rchar:")
                    .or_else(|| line.strip_prefix("wchar:"))
                {
                    total += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    total
}

/// What a busy start is said to be doing: a launcher that installs what it runs, or starting.
pub fn busy_words(command: &str, busy: Duration) -> String {
    let program = std::path::Path::new(command)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(command);
    let what = match program {
        "npx" | "uvx" | "bunx" | "pnpx" | "dnx" | "pipx" => "installing its package",
        "docker" | "podman" => "getting its image",
        _ => "starting",
    };
    format!("{what}: {} s", busy.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_busy_start_is_waited_for_and_a_silent_one_is_not() {
        let silent = Duration::from_millis(1500);
        let heard = std::sync::Mutex::new(Vec::new());
        let note = |d: Option<Duration>| heard.lock().unwrap().push(d.is_some());
        // busy: a process group that keeps working for 4 s (past `silent`), then is done
        use std::os::unix::process::CommandExt;
        let busy = std::process::Command::new("sh")
            .args([
                "-c",
                "end=$(($(date +%s)+4)); while [ $(date +%s) -lt $end ]; do :; done",
            ])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = busy.id();
        let work = tokio::time::sleep(Duration::from_secs(4));
        assert!(while_busy(work, Some(pid), silent, &note).await.is_ok());
        assert!(
            heard.lock().unwrap().contains(&true),
            "its row heard it was busy"
        );
        assert_eq!(heard.lock().unwrap().last(), Some(&false));
        // silent: a group that sleeps is given up after `silent`
        let mut quiet = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let t = Instant::now();
        let work = tokio::time::sleep(Duration::from_secs(30));
        assert_eq!(
            while_busy(work, Some(quiet.id()), silent, &note)
                .await
                .err(),
            Some(false)
        );
        assert!(t.elapsed() < Duration::from_secs(10));
        let _ = quiet.kill();
        let _ = quiet.wait();
        let mut busy = busy;
        let _ = busy.wait();
    }

    #[test]
    fn launchers_are_said_to_install() {
        assert_eq!(
            busy_words("/usr/bin/npx", Duration::from_secs(12)),
            "installing its package: 12 s"
        );
        assert_eq!(
            busy_words("python3", Duration::from_secs(3)),
            "starting: 3 s"
        );
    }
}
