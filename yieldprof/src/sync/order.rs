//! The lock-order graph: an edge from class A to class B when a thread took B while
//! holding A, kept with the first pair of acquisition sites and thread that showed it.
//! A new edge that closes a cycle records the cycle once.

use crate::base::fork::ForkMutex;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A held lock: its class (creation site) and acquisition site, as keys.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Held {
    pub(crate) class: usize,
    pub(crate) site: usize,
}

impl Held {
    pub(crate) const NONE: Held = Held { class: 0, site: 0 };
}

/// The first time an order was seen.
#[derive(Clone, Debug)]
pub(crate) struct Edge {
    pub(crate) held: Held,
    pub(crate) taken: Held,
    pub(crate) thread: String,
}

struct Graph {
    edges: BTreeMap<(usize, usize), Edge>,
    /// Each cycle's edges, in order around it.
    cycles: Vec<Vec<Edge>>,
    /// The classes of each cycle, sorted: one report per set of locks.
    reported: BTreeSet<Vec<usize>>,
}

static GRAPH: ForkMutex<Graph> = ForkMutex::new(
    Graph {
        edges: BTreeMap::new(),
        cycles: Vec::new(),
        reported: BTreeSet::new(),
    },
    |_| {},
);

/// A thread took `taken` while holding `held`.
pub(crate) fn add_edge(held: Held, taken: Held) {
    let mut g = GRAPH.lock();
    if g.edges.contains_key(&(held.class, taken.class)) {
        return;
    }
    let thread = std::thread::current().name().map_or_else(
        || format!("{:?}", std::thread::current().id()),
        str::to_owned,
    );
    let edge = Edge {
        held,
        taken,
        thread,
    };
    g.edges.insert((held.class, taken.class), edge.clone());
    if let Some(path) = g.path(taken.class, held.class) {
        let mut classes: Vec<usize> = path.iter().map(|e| e.held.class).collect();
        classes.push(held.class);
        classes.sort_unstable();
        classes.dedup();
        if g.reported.insert(classes) {
            let mut cycle = vec![edge];
            cycle.extend(path);
            g.cycles.push(cycle);
        }
    }
}

impl Graph {
    /// The edges of a shortest path from class `from` to class `to`, if any.
    fn path(&self, from: usize, to: usize) -> Option<Vec<Edge>> {
        let mut came: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(c) = queue.pop_front() {
            if c == to {
                let mut path = Vec::new();
                let mut at = to;
                while at != from {
                    let key = came[&at];
                    path.push(self.edges[&key].clone());
                    at = key.0;
                }
                path.reverse();
                return Some(path);
            }
            for &(a, b) in self.edges.range((c, 0)..=(c, usize::MAX)).map(|(k, _)| k) {
                if b != from && !came.contains_key(&b) {
                    came.insert(b, (a, b));
                    queue.push_back(b);
                }
            }
        }
        None
    }
}

/// Every cycle found so far.
pub(crate) fn cycles() -> Vec<Vec<Edge>> {
    GRAPH.lock().cycles.clone()
}
