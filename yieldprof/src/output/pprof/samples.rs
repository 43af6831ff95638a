//! pprof samples, merged as they are added and written one by one: each node's stack
//! is interned once, so a sample is a few numbers however deep its stack is.

use super::proto;
use std::collections::HashMap;
use std::io::{self, Write};

/// Hashes the builder's integer keys (ids it gives out itself, so nobody picks them to
/// collide) with FxHash's multiply-rotate: a profile of many stacks makes millions of
/// lookups, and SipHash was a third of the time spent building it.
#[derive(Clone, Copy, Default)]
pub(super) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Slices of integers (the arrays in keys) come as their bytes.
        let mut words = bytes.chunks_exact(8);
        for w in words.by_ref() {
            self.write_u64(u64::from_ne_bytes(w.try_into().expect("8 bytes")));
        }
        for b in words.remainder() {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub(super) type IdMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

/// No stack: above a thread root.
pub(super) const NO_STACK: u32 = u32::MAX;

/// The samples, merged: each node's stack is interned once (its location and its
/// parent's stack), so a sample is a few numbers however deep it is.
#[derive(Default)]
pub(super) struct Samples {
    /// Interned stacks: a location and the stack above it (or [`NO_STACK`]).
    stacks: Vec<(u64, u32)>,
    stack_ids: IdMap<(u64, u32), u32>,
    /// Each sample: its key, and where its values start in `values`.
    list: Vec<(SampleKey, usize)>,
    index: IdMap<SampleKey, usize>,
    /// The values of every sample, one per active sample type each.
    values: Vec<i64>,
}

/// A sample's identity: up to two leaf locations (innermost first; 0 for none) above an
/// interned stack, its thread and its kind (string ids).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct SampleKey {
    pub(super) leaves: [u64; 2],
    pub(super) stack: u32,
    pub(super) thread: i64,
    pub(super) kind: i64,
}

impl Samples {
    /// Room for the stacks of `nodes` nodes and twice as many samples of up to `values`
    /// values each.
    pub(super) fn reserve(&mut self, nodes: usize, values: usize) {
        self.stacks.reserve(nodes);
        self.stack_ids.reserve(nodes);
        self.list.reserve(2 * nodes);
        self.index.reserve(2 * nodes);
        self.values.reserve(2 * nodes * values);
    }

    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// Adds `values` to the sample `key`: whether it is a new one.
    pub(super) fn add(&mut self, key: SampleKey, values: &[i64]) -> bool {
        if let Some(&i) = self.index.get(&key) {
            let at = self.list[i].1;
            for (sum, v) in self.values[at..at + values.len()].iter_mut().zip(values) {
                *sum = sum.saturating_add(*v);
            }
            return false;
        }
        self.index.insert(key, self.list.len());
        self.list.push((key, self.values.len()));
        self.values.extend_from_slice(values);
        true
    }

    /// Writes each sample (`n` values, labels keyed `labels`: thread and kind) as a
    /// `Sample` message in field `tag` of the profile, in the order they came.
    pub(super) fn write(
        &self,
        tag: u32,
        n: usize,
        labels: [i64; 2],
        out: &mut impl Write,
    ) -> io::Result<()> {
        let label = |key| proto::Label { key, str: 0 };
        let mut sample = proto::Sample {
            label: labels.map(label).to_vec(),
            ..proto::Sample::default()
        };
        let mut buf = Vec::with_capacity(1 << 16);
        for (key, at) in &self.list {
            self.locations(key, &mut sample.location_id);
            sample.value.clear();
            sample.value.extend_from_slice(&self.values[*at..*at + n]);
            sample.label[0].str = key.thread;
            sample.label[1].str = key.kind;
            proto::delimited(&mut buf, tag, |b| sample.encode(b));
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        out.write_all(&buf)
    }

    /// The stack of `location` above `parent`.
    pub(super) fn stack(&mut self, location: u64, parent: u32) -> u32 {
        let next = self.stacks.len() as u32;
        let id = *self.stack_ids.entry((location, parent)).or_insert(next);
        if id == next {
            self.stacks.push((location, parent));
        }
        id
    }

    /// The locations of `key`, innermost first, into `out`.
    fn locations(&self, key: &SampleKey, out: &mut Vec<u64>) {
        out.clear();
        out.extend(key.leaves.iter().filter(|&&l| l != 0));
        let mut at = key.stack;
        while at != NO_STACK {
            let (location, parent) = self.stacks[at as usize];
            out.push(location);
            at = parent;
        }
    }
}
