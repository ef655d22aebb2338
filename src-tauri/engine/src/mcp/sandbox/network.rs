//! What a sandboxed server reaches of the network, decided by the host, and what it tried.
//!
//! Three settings: none (`"network": false`), only some hosts (`"hosts": ["api.example.com",
//! "*.example.org", "localhost:8080"]`), or all (`"network": true`). With none or some, the
//! server can open TCP sockets but never connect or bind one itself: its `connect` and `bind` go
//! to the host (`supervise.rs`), which does them on the server's own socket when the destination
//! is allowed, and otherwise refuses (EACCES) and notes what was tried. Its name lookups go to a
//! small DNS server of the host's ([`Stub`]; the C library is told to ask over TCP,
//! `RES_OPTIONS=use-vc`, and any connection to port 53 reaches the stub): an allowed name is
//! looked up by the host and answered, and the addresses it gave are the ones the server may then
//! reach; any other name is refused and noted. So the host knows exactly what the server tried
//! ("example.com", "93.184.215.14:443"), not from the server's words, and an allow-list holds
//! whatever the server's own code does: it cannot connect to an address the host did not give it
//! for an allowed name (or list itself), cannot send a datagram (UDP sockets are refused), and
//! cannot use a TCP fast open to connect without `connect`.
//!
//! What it does not hold against: another site on the same address as an allowed one (a shared
//! CDN address reaches every site it serves, by its name in TLS or HTTP), and what the allowed
//! hosts themselves relay.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

pub use super::super::config::HostRule;

/// What a server may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    None,
    Hosts(Vec<HostRule>),
    All,
}

/// Something a server tried to reach, with how many times, and whether it was let through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetAttempt {
    /// `example.com`, `example.com:443`, or `93.184.215.14:443` for an address no allowed name
    /// gave.
    pub target: String,
    /// The name, when it is known: what "allow this host" adds.
    pub host: String,
    pub count: u64,
    pub allowed: bool,
}

/// What a server tried, newest last; shared by its supervisor, its stub and its row. A refusal
/// of a target not refused before is told to `report` (the server's log).
#[derive(Clone, Default)]
pub struct Attempts {
    list: Arc<Mutex<Vec<NetAttempt>>>,
    report: Option<Report>,
}

/// Where new refusals are told.
type Report = Arc<dyn Fn(&NetAttempt) + Send + Sync>;

impl std::fmt::Debug for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.list().iter()).finish()
    }
}

/// The most targets noted per server (the oldest go first).
const MAX_NOTED: usize = 64;

impl Attempts {
    /// Attempts whose new refusals are told to `report`.
    pub fn reporting(report: impl Fn(&NetAttempt) + Send + Sync + 'static) -> Attempts {
        Attempts {
            list: Default::default(),
            report: Some(Arc::new(report)),
        }
    }

    fn note(&self, target: String, host: String, allowed: bool) {
        let first = self.note_only(target, host, allowed);
        if let (Some(a), Some(report)) = (first, &self.report) {
            report(&a);
        }
    }

    /// Notes it; the attempt when it is a refusal not seen before.
    fn note_only(&self, target: String, host: String, allowed: bool) -> Option<NetAttempt> {
        let mut list = self.list.lock().unwrap();
        if let Some(i) = list
            .iter()
            .position(|a| a.target == target && a.allowed == allowed)
        {
            let mut a = list.remove(i);
            a.count += 1;
            list.push(a);
            None
        } else {
            if list.len() == MAX_NOTED {
                list.remove(0);
            }
            let a = NetAttempt {
                target,
                host,
                count: 1,
                allowed,
            };
            list.push(a.clone());
            (!allowed).then_some(a)
        }
    }

    /// Everything noted.
    pub fn list(&self) -> Vec<NetAttempt> {
        self.list.lock().unwrap().clone()
    }

    /// The refusals noted since `before` (a [`Self::list`] taken earlier), with the count since.
    pub fn refused_since(&self, before: &[NetAttempt]) -> Vec<NetAttempt> {
        self.list()
            .into_iter()
            .filter(|a| !a.allowed)
            .filter_map(|mut a| {
                let had = before
                    .iter()
                    .find(|b| b.target == a.target && !b.allowed)
                    .map_or(0, |b| b.count);
                (a.count > had).then(|| {
                    a.count -= had;
                    a
                })
            })
            .collect()
    }
}

/// Where a connection goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// To the host's DNS stub, whatever address the server named.
    Stub(SocketAddr),
    /// Where the server asked.
    Direct,
    Refused,
}

/// A server's network, as its supervisor and stub decide it.
pub struct Network {
    reach: Reach,
    attempts: Attempts,
    /// The addresses allowed names had, with the name.
    given: Mutex<BTreeMap<IpAddr, String>>,
    stub: Option<Stub>,
}

impl Network {
    /// The network of a server that may reach `reach`; with none or some hosts, its DNS stub
    /// starts, and the listed names are looked up (so a name the server finds in `/etc/hosts`
    /// reaches the same addresses).
    pub fn start(reach: Reach, attempts: Attempts) -> std::io::Result<Arc<Network>> {
        let net = Arc::new_cyclic(|weak: &std::sync::Weak<Network>| {
            let stub = match reach {
                Reach::All => None,
                _ => Stub::start(weak.clone()).ok(),
            };
            Network {
                reach,
                attempts,
                given: Default::default(),
                stub,
            }
        });
        if !matches!(net.reach, Reach::All) && net.stub.is_none() {
            return Err(std::io::Error::other("cannot start its DNS stub"));
        }
        if let Reach::Hosts(rules) = &net.reach {
            for r in rules.iter().filter(|r| !r.wildcard && r.address.is_none()) {
                net.look_up(&r.host);
            }
        }
        Ok(net)
    }

    pub fn attempts(&self) -> &Attempts {
        &self.attempts
    }

    /// The host's addresses of `name` (an allowed one), remembered as given.
    fn look_up(&self, name: &str) -> Vec<IpAddr> {
        let found: Vec<IpAddr> = (name, 0)
            .to_socket_addrs()
            .map(|a| a.map(|s| s.ip()).collect())
            .unwrap_or_default();
        let mut given = self.given.lock().unwrap();
        for ip in &found {
            given.insert(canonical(*ip), name.to_string());
        }
        found
    }

    fn name_allowed(&self, name: &str) -> bool {
        match &self.reach {
            Reach::All => true,
            Reach::None => false,
            Reach::Hosts(rules) => rules.iter().any(|r| r.names(name)),
        }
    }

    /// Where a connection to `to` goes; what was tried is noted.
    pub fn route(&self, to: SocketAddr) -> Route {
        let ip = canonical(to.ip());
        if to.port() == 53 {
            if let Some(stub) = &self.stub {
                return Route::Stub(stub.addr);
            }
        }
        let name = self.given.lock().unwrap().get(&ip).cloned();
        let allowed = match &self.reach {
            Reach::All => true,
            Reach::None => false,
            Reach::Hosts(rules) => rules.iter().any(|r| {
                r.port_ok(to.port())
                    && match (&r.address, &name) {
                        (Some(a), _) => canonical(*a) == ip,
                        (None, Some(n)) => r.names(n),
                        (None, None) => false,
                    }
            }),
        };
        let shown = SocketAddr::new(ip, to.port());
        let (target, host) = match name {
            Some(n) => (format!("{n}:{}", to.port()), n),
            None => (shown.to_string(), ip.to_string()),
        };
        self.attempts.note(target, host, allowed);
        if allowed {
            Route::Direct
        } else {
            Route::Refused
        }
    }

    /// A binding: only to this computer's own addresses (a server's sign-in callback), never
    /// where the network could reach it; a port the system gives, or one from 1024 that no
    /// program on this computer listens on (on another loopback address a client of that program
    /// could reach the server instead).
    pub fn may_bind(&self, at: SocketAddr) -> bool {
        if matches!(self.reach, Reach::All) {
            return true;
        }
        canonical(at.ip()).is_loopback()
            && (at.port() == 0 || (at.port() >= 1024 && !listened_on(at.port())))
    }

    /// The stub's answer to one DNS message (`None`: not a question it can answer at all). A
    /// refused name is noted once per lookup: `seen` holds the names of this connection (the C
    /// library asks for IPv4 and IPv6 addresses on one).
    fn answer(&self, query: &[u8], seen: &mut Vec<String>) -> Option<Vec<u8>> {
        use simple_dns::rdata::{RData, A, AAAA};
        use simple_dns::{Packet, PacketFlag, ResourceRecord, CLASS, QTYPE, RCODE, TYPE};
        let q = Packet::parse(query).ok()?;
        let mut reply = Packet::new_reply(q.id());
        reply.set_flags(PacketFlag::RECURSION_AVAILABLE | PacketFlag::RECURSION_DESIRED);
        let question = q.questions.first()?.clone();
        let name = question
            .qname
            .to_string()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        reply.questions.push(question.clone());
        let wanted = match question.qtype {
            QTYPE::TYPE(TYPE::A) => Some(true),
            QTYPE::TYPE(TYPE::AAAA) => Some(false),
            _ => None,
        };
        if !self.name_allowed(&name) {
            if !seen.contains(&name) {
                seen.push(name.clone());
                // what it asked is the server's: only a host name is offered to allow, and told
                // as it is; anything else as what it is
                let host = HostRule::parse(&name)
                    .ok()
                    .filter(|r| !r.wildcard && r.address.is_none())
                    .map(|r| r.host);
                match host {
                    Some(h) => self.attempts.note(h.clone(), h, false),
                    None => self.attempts.note(
                        "a name that is not a host name".into(),
                        String::new(),
                        false,
                    ),
                }
            }
            *reply.rcode_mut() = RCODE::Refused;
            return reply.build_bytes_vec().ok();
        }
        if let Some(v4) = wanted {
            for ip in self.look_up(&name) {
                let rdata = match (ip, v4) {
                    (IpAddr::V4(a), true) => RData::A(A {
                        address: u32::from(a),
                    }),
                    (IpAddr::V6(a), false) => RData::AAAA(AAAA {
                        address: u128::from(a),
                    }),
                    _ => continue,
                };
                reply.answers.push(ResourceRecord::new(
                    question.qname.clone(),
                    CLASS::IN,
                    60,
                    rdata,
                ));
            }
        }
        reply.build_bytes_vec().ok()
    }
}

/// Whether a program of this network namespace listens on TCP `port` (any address).
fn listened_on(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                let listening = cols.get(3) == Some(&"0A");
                let local_port = cols
                    .get(1)
                    .and_then(|a| a.rsplit_once(':'))
                    .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
                listening && local_port == Some(port)
            })
        })
    })
}

/// An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// A server's DNS stub: DNS over TCP on a loopback port of the host's, answered by
/// [`Network::answer`]. Ends with the server's [`Network`].
struct Stub {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

/// The most a DNS message over TCP may be, the most asked on one connection, how long one
/// connection may last, and how many may be open at once (more are closed at once: a server
/// cannot take the host's threads and descriptors).
const MAX_MESSAGE: usize = 4096;
const MAX_QUESTIONS: usize = 32;
const CONNECTION_LIFE: Duration = Duration::from_secs(10);
const MAX_CONNECTIONS: usize = 16;

impl Stub {
    fn start(net: std::sync::Weak<Network>) -> std::io::Result<Stub> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let ending = stop.clone();
        let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        std::thread::Builder::new()
            .name("sandbox-dns".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if ending.load(Ordering::Relaxed) {
                        return;
                    }
                    let (Ok(conn), Some(_)) = (conn, net.upgrade()) else {
                        continue;
                    };
                    if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        open.fetch_sub(1, Ordering::SeqCst);
                        continue;
                    }
                    let (net, open) = (net.clone(), open.clone());
                    // a thread that did not start keeps the count it took: a host short of
                    // threads answers fewer
                    let _ = std::thread::Builder::new()
                        .name("sandbox-dns-conn".into())
                        .spawn(move || {
                            serve(conn, net);
                            open.fetch_sub(1, Ordering::SeqCst);
                        });
                }
            })?;
        Ok(Stub { addr, stop })
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // wake the accepting thread
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// Answers the questions of one connection (2-byte length, then the message).
fn serve(mut conn: TcpStream, net: std::sync::Weak<Network>) {
    let end = std::time::Instant::now() + CONNECTION_LIFE;
    let mut seen = Vec::new();
    for _ in 0..MAX_QUESTIONS {
        // the connection's whole life, not each read's
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        let _ = conn.set_read_timeout(Some(left));
        let _ = conn.set_write_timeout(Some(left));
        let mut len = [0u8; 2];
        if conn.read_exact(&mut len).is_err() {
            return;
        }
        let len = u16::from_be_bytes(len) as usize;
        if len == 0 || len > MAX_MESSAGE {
            return;
        }
        let mut msg = vec![0u8; len];
        if conn.read_exact(&mut msg).is_err() {
            return;
        }
        let Some(net) = net.upgrade() else { return };
        let Some(answer) = net.answer(&msg, &mut seen) else {
            return;
        };
        let mut out = (answer.len() as u16).to_be_bytes().to_vec();
        out.extend(answer);
        if conn.write_all(&out).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_names_wildcards_or_addresses_with_a_port_or_not() {
        let r = |s: &str| HostRule::parse(s).unwrap();
        assert_eq!(r("Example.COM.").host, "example.com");
        assert_eq!(r("example.com:443").port, Some(443));
        let w = r("*.example.org");
        assert!(w.wildcard && w.names("api.example.org") && w.names("a.b.example.org"));
        assert!(!w.names("example.org") && !w.names("badexample.org"));
        assert!(r("example.org").names("example.org") && !r("example.org").names("x.example.org"));
        assert_eq!(r("10.0.0.5").address, Some("10.0.0.5".parse().unwrap()));
        assert_eq!(r("[::1]:8080").port, Some(8080));
        assert_eq!(r("::1").address, Some("::1".parse().unwrap()));
        for bad in [
            "",
            "exa mple.com",
            "example.com:0",
            "example.com:99999",
            "-x.com",
            "*.",
            "[::1",
            "a..b",
        ] {
            assert!(HostRule::parse(bad).is_err(), "{bad}");
        }
    }

    fn query(name: &str, qtype: simple_dns::TYPE) -> Vec<u8> {
        use simple_dns::{Name, Packet, Question, CLASS, QTYPE};
        let mut p = Packet::new_query(7);
        p.questions.push(Question::new(
            Name::new_unchecked(name),
            QTYPE::TYPE(qtype),
            CLASS::IN.into(),
            false,
        ));
        p.build_bytes_vec().unwrap()
    }

    #[test]
    fn the_stub_answers_allowed_names_and_notes_the_others() {
        use simple_dns::{rdata::RData, Packet, RCODE, TYPE};
        let attempts = Attempts::default();
        let net = Network::start(
            Reach::Hosts(vec![HostRule::parse("localhost").unwrap()]),
            attempts.clone(),
        )
        .unwrap();
        let bytes = net
            .answer(&query("localhost", TYPE::A), &mut vec![])
            .unwrap();
        let a = Packet::parse(&bytes).unwrap();
        assert_eq!((a.id(), a.rcode()), (7, RCODE::NoError));
        assert!(a
            .answers
            .iter()
            .any(|rr| matches!(rr.rdata, RData::A(ref x) if x.address == 0x7f00_0001)));
        let bytes = net
            .answer(&query("exfil.example.com", TYPE::A), &mut vec![])
            .unwrap();
        assert_eq!(Packet::parse(&bytes).unwrap().rcode(), RCODE::Refused);
        // a name that is not a host name is told as such, with nothing to allow
        net.answer(&query("*.com", TYPE::A), &mut vec![]);
        // what it gave may be reached; what it did not, not; DNS goes to the stub
        assert_eq!(net.route("127.0.0.1:8080".parse().unwrap()), Route::Direct);
        assert_eq!(
            net.route("[::ffff:127.0.0.1]:8080".parse().unwrap()),
            Route::Direct
        );
        assert_eq!(
            net.route("93.184.215.14:443".parse().unwrap()),
            Route::Refused
        );
        assert!(matches!(
            net.route("8.8.8.8:53".parse().unwrap()),
            Route::Stub(_)
        ));
        let refused: Vec<String> = attempts
            .list()
            .into_iter()
            .filter(|a| !a.allowed)
            .map(|a| a.target)
            .collect();
        assert_eq!(
            refused,
            [
                "exfil.example.com",
                "a name that is not a host name",
                "93.184.215.14:443"
            ]
        );
        assert!(attempts
            .list()
            .iter()
            .all(|a| a.target != "a name that is not a host name" || a.host.is_empty()));
        // garbage is no question
        assert_eq!(net.answer(b"\x00\x01garbage", &mut vec![]), None);
    }

    #[test]
    fn a_port_in_the_rule_is_the_only_port() {
        let net = Network::start(
            Reach::Hosts(vec![HostRule::parse("127.0.0.1:8080").unwrap()]),
            Attempts::default(),
        )
        .unwrap();
        assert_eq!(net.route("127.0.0.1:8080".parse().unwrap()), Route::Direct);
        assert_eq!(net.route("127.0.0.1:8081".parse().unwrap()), Route::Refused);
        assert!(net.may_bind("127.0.0.1:0".parse().unwrap()));
        assert!(!net.may_bind("0.0.0.0:8080".parse().unwrap()));
    }

    #[test]
    fn refusals_since_a_moment_are_counted_not_repeated() {
        let a = Attempts::default();
        a.note("x.com".into(), "x.com".into(), false);
        let before = a.list();
        a.note("x.com".into(), "x.com".into(), false);
        a.note("x.com".into(), "x.com".into(), false);
        a.note("y.com".into(), "y.com".into(), false);
        let since = a.refused_since(&before);
        assert_eq!(since.len(), 2);
        assert_eq!((since[0].target.as_str(), since[0].count), ("x.com", 2));
        assert_eq!(a.list()[0].count + a.list()[1].count, 4);
    }
}
