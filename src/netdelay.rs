//! The packet delayer a `delay` fault runs inside a node whose kernel has no netem
//! (`shakedown netdelay`, hidden): the node's outgoing packets are queued to it by an iptables
//! `NFQUEUE` rule (`nemesis::packet` adds and removes the rule and starts and stops this
//! program), it holds each packet for the fault's delay ± jitter (so jitter reorders, as with
//! netem), sends a `reorder` fraction at once, and hands every packet back to the kernel with an
//! accept verdict when its time is due.
//!
//! Owns the schedule ([`Schedule`]: seeded, pure), the lateness statistics ([`Lateness`]: how
//! long after its due time each packet was released, for the accuracy figures) and the queue
//! loop ([`serve`]: the `nfq` crate's netlink queue, read without blocking and waited on with
//! `ppoll` until the next packet is due). It asks for packet metadata only (copy range 0), asks
//! the kernel to accept packets when its queue is full rather than drop them (fail-open), and
//! the rule is added with `--queue-bypass`, so a dead delayer never becomes a partition. On
//! SIGTERM or SIGINT it releases every packet it holds at once and prints a `summary` JSON
//! line. Does not own the iptables rule, the pidfile or where the program runs
//! (`nemesis::packet`), or the fault's parameters (`faults::packet`).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The line the delayer prints once its queue is bound (the start script waits for it).
pub const READY: &str = "ready";
/// Prefix of the line it prints when it stops: `summary {json}`.
pub const SUMMARY: &str = "summary";

/// How long each packet is held: `delay_us` ± a uniform `jitter_us`, or not at all for a
/// `reorder` fraction. Seeded, so a run's schedule can be replayed.
#[derive(Debug)]
pub struct Schedule {
    delay_us: u64,
    jitter_us: u64,
    reorder: f64,
    rng: ChaCha8Rng,
}

impl Schedule {
    /// A schedule of `delay_ms` ± `jitter_ms` with a `reorder` fraction sent at once.
    pub fn new(delay_ms: u64, jitter_ms: u64, reorder: f64, seed: u64) -> Schedule {
        Schedule {
            delay_us: delay_ms * 1000,
            jitter_us: jitter_ms.min(delay_ms) * 1000,
            reorder,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// How long the next packet waits.
    pub fn hold(&mut self) -> Duration {
        if self.reorder > 0.0 && self.rng.random::<f64>() < self.reorder {
            return Duration::ZERO;
        }
        let us = if self.jitter_us == 0 {
            self.delay_us
        } else {
            self.rng
                .random_range(self.delay_us - self.jitter_us..=self.delay_us + self.jitter_us)
        };
        Duration::from_micros(us)
    }
}

/// How late packets were released, in µs after their due time: a histogram of 1 µs buckets up
/// to 100 ms (later ones counted in the last).
#[derive(Debug, Clone)]
pub struct Lateness {
    buckets: Vec<u64>,
    count: u64,
    max_us: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness {
            buckets: vec![0; Self::BUCKETS],
            count: 0,
            max_us: 0,
        }
    }
}

impl Lateness {
    const BUCKETS: usize = 100_001;

    /// Count one packet released `late_us` after it was due.
    pub fn record(&mut self, late_us: u64) {
        let i = (late_us as usize).min(Self::BUCKETS - 1);
        self.buckets[i] += 1;
        self.count += 1;
        self.max_us = self.max_us.max(late_us);
    }

    /// The `q` quantile (0..=1) in µs; 0 when nothing was recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (us, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return us as u64;
            }
        }
        self.max_us
    }

    /// Packets recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The latest release, µs after its due time.
    pub fn max_us(&self) -> u64 {
        self.max_us
    }
}

/// What the delayer is told (`shakedown netdelay` flags).
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The NFQUEUE queue number the rule sends packets to.
    pub queue: u16,
    /// Delay in ms.
    pub delay_ms: u64,
    /// Jitter (uniform ±) in ms.
    pub jitter_ms: u64,
    /// Fraction of packets sent at once.
    pub reorder: f64,
    /// Seed of the schedule.
    pub seed: u64,
    /// Most packets the kernel keeps queued for the delayer before it accepts new ones unheld.
    pub max_queued: u32,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// The descriptors this process has open (from `/proc/self/fd`).
fn open_fds() -> BTreeSet<i32> {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Wait until `fd` is readable or `timeout` passed (or a signal came).
fn wait_readable(fd: Option<i32>, timeout: Duration) {
    match fd {
        Some(fd) => {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ts = libc::timespec {
                tv_sec: timeout.as_secs() as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
            unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
        }
        // The queue's socket could not be told apart: poll it every 200 µs.
        None => std::thread::sleep(timeout.min(Duration::from_micros(200))),
    }
}

/// Words for an error of the queue's netlink socket.
fn queue_error(what: &str, queue: u16, e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => format!(
            "{what} netfilter queue {queue}: not permitted (the delayer needs root or CAP_NET_ADMIN)"
        ),
        Some(libc::EBUSY) => {
            format!("{what} netfilter queue {queue}: another program already holds that queue")
        }
        _ => format!("{what} netfilter queue {queue}: {e}"),
    }
}

/// A packet waiting for its due time (ordered by due time, then arrival).
struct Held {
    due: Instant,
    seq: u64,
    msg: nfq::Message,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

/// Bind the queue and delay its packets until SIGTERM/SIGINT; then release everything held and
/// return the summary (also printed as `summary {json}`).
pub fn serve(o: &ServeOptions) -> Result<serde_json::Value, String> {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let before = open_fds();
    let mut q = nfq::Queue::open().map_err(|e| queue_error("cannot open a", o.queue, &e))?;
    // The queue's socket is the descriptor `open` added (the crate does not expose it).
    let new: Vec<i32> = open_fds().difference(&before).copied().collect();
    let fd = match new.as_slice() {
        [fd] => Some(*fd),
        _ => None,
    };
    if let Some(fd) = fd {
        // A burst larger than the socket's buffer would be accepted undelayed (fail-open).
        let bytes: libc::c_int = 16 << 20;
        // SAFETY: the queue's own socket and a c_int option value; failure leaves the default.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                &bytes as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    q.bind(o.queue)
        .map_err(|e| queue_error("cannot bind", o.queue, &e))?;
    q.set_copy_range(o.queue, 0)
        .map_err(|e| queue_error("cannot configure", o.queue, &e))?;
    q.set_queue_max_len(o.queue, o.max_queued)
        .map_err(|e| queue_error("cannot configure", o.queue, &e))?;
    q.set_fail_open(o.queue, true)
        .map_err(|e| queue_error("cannot configure", o.queue, &e))?;
    q.set_nonblocking(true);
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "{READY} queue {} delay {} ms jitter {} ms reorder {}",
        o.queue, o.delay_ms, o.jitter_ms, o.reorder
    );
    let _ = out.flush();

    let mut schedule = Schedule::new(o.delay_ms, o.jitter_ms, o.reorder, o.seed);
    let mut held: BinaryHeap<Reverse<Held>> = BinaryHeap::new();
    let mut lateness = Lateness::default();
    let (mut seq, mut immediate, mut max_held, mut errors) = (0u64, 0u64, 0usize, 0u64);
    let mut first_error: Option<String> = None;
    let mut note_error = |e: std::io::Error, errors: &mut u64| {
        *errors += 1;
        first_error.get_or_insert_with(|| e.to_string());
    };
    while !STOP.load(Ordering::SeqCst) {
        // Take everything queued now.
        loop {
            match q.recv() {
                Ok(mut msg) => {
                    let hold = schedule.hold();
                    if hold.is_zero() {
                        immediate += 1;
                        msg.set_verdict(nfq::Verdict::Accept);
                        if let Err(e) = q.verdict(msg) {
                            note_error(e, &mut errors);
                        }
                    } else {
                        seq += 1;
                        held.push(Reverse(Held {
                            due: Instant::now() + hold,
                            seq,
                            msg,
                        }));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => break,
                Err(e) => {
                    note_error(e, &mut errors);
                    break;
                }
            }
        }
        max_held = max_held.max(held.len());
        // Release what is due.
        let now = Instant::now();
        while held.peek().is_some_and(|h| h.0.due <= now) {
            let Reverse(mut h) = held.pop().expect("peeked");
            lateness.record(now.duration_since(h.due).as_micros() as u64);
            h.msg.set_verdict(nfq::Verdict::Accept);
            if let Err(e) = q.verdict(h.msg) {
                note_error(e, &mut errors);
            }
        }
        let wait = held
            .peek()
            .map(|h| h.0.due.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(100))
            .min(Duration::from_millis(100));
        wait_readable(fd, wait);
    }
    // Stopping: everything held goes out now.
    let released_at_stop = held.len();
    while let Some(Reverse(mut h)) = held.pop() {
        h.msg.set_verdict(nfq::Verdict::Accept);
        if let Err(e) = q.verdict(h.msg) {
            note_error(e, &mut errors);
        }
    }
    let _ = q.unbind(o.queue);
    let summary = serde_json::json!({
        "delayed": lateness.count(),
        "immediate": immediate,
        "released_at_stop": released_at_stop,
        "max_held": max_held,
        "late_p50_us": lateness.quantile(0.5),
        "late_p99_us": lateness.quantile(0.99),
        "late_max_us": lateness.max_us(),
        "errors": errors,
        "first_error": first_error,
    });
    let _ = writeln!(out, "{SUMMARY} {summary}");
    let _ = out.flush();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_holds_within_the_jitter_and_reorders_a_fraction() {
        let mut s = Schedule::new(100, 50, 0.25, 7);
        let holds: Vec<Duration> = (0..20_000).map(|_| s.hold()).collect();
        let at_once = holds.iter().filter(|h| h.is_zero()).count() as f64 / 20_000.0;
        assert!((at_once - 0.25).abs() < 0.02, "{at_once}");
        let held: Vec<u128> = holds
            .iter()
            .filter(|h| !h.is_zero())
            .map(|h| h.as_micros())
            .collect();
        assert!(held.iter().all(|us| (50_000..=150_000).contains(us)));
        let mean = held.iter().sum::<u128>() as f64 / held.len() as f64;
        assert!((mean - 100_000.0).abs() < 2_000.0, "{mean}");
        // Both ends of the jitter are reached, so packets overtake each other.
        assert!(held.iter().any(|&us| us < 55_000) && held.iter().any(|&us| us > 145_000));
        // Seeded: the same seed gives the same schedule.
        let mut again = Schedule::new(100, 50, 0.25, 7);
        assert!(holds.iter().take(100).all(|h| *h == again.hold()));
        // No jitter, no reorder: exactly the delay.
        let mut fixed = Schedule::new(30, 0, 0.0, 1);
        assert!((0..100).all(|_| fixed.hold() == Duration::from_millis(30)));
    }

    #[test]
    fn lateness_quantiles() {
        let mut l = Lateness::default();
        assert_eq!((l.quantile(0.5), l.count()), (0, 0));
        for us in 1..=100 {
            l.record(us);
        }
        l.record(5_000_000);
        assert_eq!(l.count(), 101);
        assert_eq!(l.quantile(0.5), 51);
        assert_eq!(l.quantile(0.99), 100);
        assert_eq!(l.quantile(1.0), 100_000);
        assert_eq!(l.max_us(), 5_000_000);
    }
}
