//! The handoff finding: a wait site where nearly every episode gives the CPU up and
//! waits to be woken (a rendezvous channel, a ping-pong over park or a Condvar). Each
//! such episode pays a switch out and a wake-up back in, however short the work it
//! waits for; the remedies change the protocol, not the wait.

use crate::analysis::costs::Costs;
use crate::base::site::Kind;
use crate::base::text::{duration, percent};
use crate::model::profile::SiteStats;

/// Voluntary switches per episode at or above which nearly every episode handed off:
/// a rendezvous ping-pong reads ~1 per episode (two threads on the build VM's 2 cores);
/// a buffered channel's receiver, whose messages mostly wait for it, reads a few %.
pub(super) const HANDOFF_SWITCHES_PER_EPISODE: f64 = 0.8;

/// The kinds whose calls wait for another thread to hand something over (not a timer:
/// a sleep switches every time by design and says nothing of a peer).
const HANDOFF_KINDS: [Kind; 3] = [Kind::Channel, Kind::Park, Kind::Condvar];

/// The evidence and the fix, where the site's episodes nearly all switched out in its
/// handoff calls and those switches cost at least the share `material` of `threads_ns`
/// (a handoff per long wait costs nothing); `None` without switch counters or with
/// fewer than `min_episodes`.
pub(super) fn handoff(
    site: &SiteStats,
    costs: &Costs,
    min_episodes: u64,
    threads_ns: u64,
    material: f64,
) -> Option<(Kind, String, String)> {
    let voluntary = site.counters.voluntary_switches.value()?;
    let episodes = site.timed_episodes();
    if episodes < min_episodes || site.calls_of(Kind::Sleep) > 0 {
        return None;
    }
    let kind = HANDOFF_KINDS
        .into_iter()
        .max_by_key(|&k| site.calls_of(k))?;
    let calls = site.calls_of(kind);
    let per_episode = voluntary as f64 / episodes as f64;
    if calls < episodes / 2 || per_episode < HANDOFF_SWITCHES_PER_EPISODE {
        return None;
    }
    // A switch out and the wake-up back in: two switches' worth per handoff.
    let paid = 2.0 * costs.switch_ns * voluntary as f64;
    if paid < material * threads_ns as f64 {
        return None;
    }
    let evidence = format!(
        "{episodes} episodes made {voluntary} voluntary switches ({per_episode:.2} per \
         episode) in {calls} {} calls: nearly every wait handed the thread off and waited \
         to be woken, ~{}{} each way ({} switch cost in all, {:.0}% of the episodes' {}, \
         {:.1}% of the threads' time){}",
        kind.name(),
        duration(costs.switch_ns as u64),
        if costs.switch_measured {
            ""
        } else {
            " (a default, not measured here)"
        },
        duration(paid as u64),
        percent(paid as u64, site.wall_ns),
        duration(site.wall_ns),
        100.0 * paid / threads_ns.max(1) as f64,
        if site.counters.voluntary_switches.is_scaled() {
            "; switches estimated from sampled episodes"
        } else {
            ""
        }
    );
    let fix = match kind {
        Kind::Channel => {
            "batch: send a Vec of items per message, or use a buffered channel \
             (`sync_channel(n)` with n > 0, `crossbeam_channel::bounded(n)`) so the sender \
             runs ahead instead of meeting the receiver on every message"
        }
        _ => {
            "hand over work in batches (a queue drained per wake-up) rather than one item \
             per wake-up, and let the producer run ahead of the consumer"
        }
    };
    Some((kind, evidence, fix.into()))
}
