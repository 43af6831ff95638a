//! A line's rows for the report: its watched fields and array elements (or the granules
//! accessed outside them), each with the per-thread counts of the granules under it.

use super::fields::Part;
use super::*;

/// Parts that share a granule (two `u8` flags) make one row: the counts are per granule.
#[derive(Clone, Debug)]
pub(super) struct Row {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) parts: Vec<Part>,
    /// Per thread block with accesses: (block, reads, writes).
    pub(super) blocks: Vec<(usize, u64, u64)>,
    pub(super) invalidations: u64,
}

impl Row {
    fn granules(&self) -> std::ops::RangeInclusive<usize> {
        self.start % LINE / GRANULE..=(self.end - 1) % LINE / GRANULE
    }

    pub(super) fn name(&self) -> String {
        let names: Vec<&str> = self.parts.iter().map(|p| p.name.as_str()).collect();
        names.join("/")
    }

    pub(super) fn accessed(&self) -> bool {
        !self.blocks.is_empty()
    }
}

/// The rows of `rec`, by address.
pub(super) fn rows_of(rec: &LineRecord) -> Vec<Row> {
    let accessed = |g: usize| (0..BLOCKS).any(|b| rec.rw[b][g] != [0, 0]);
    let mut parts: Vec<Part> = rec
        .fields
        .iter()
        .flat_map(|f| f.parts(rec.line, LINE))
        .collect();
    for g in (0..GRANULES).filter(|&g| accessed(g)) {
        let at = rec.line + g * GRANULE;
        if !parts.iter().any(|p| p.start < at + GRANULE && at < p.end) {
            parts.push(Part {
                start: at,
                end: at + GRANULE,
                name: "?".into(),
                ty: String::new(),
                size: GRANULE,
                offset: (g * GRANULE) as isize,
                array: None,
                opaque: true,
            });
        }
    }
    parts.sort_by_key(|p| p.start);
    let mut rows: Vec<Row> = Vec::new();
    for p in parts {
        match rows.last_mut() {
            Some(r) if p.start / GRANULE <= (r.end - 1) / GRANULE => {
                r.end = r.end.max(p.end);
                r.parts.push(p);
            }
            _ => rows.push(Row {
                start: p.start,
                end: p.end,
                parts: vec![p],
                blocks: Vec::new(),
                invalidations: 0,
            }),
        }
    }
    for r in &mut rows {
        let granules = r.granules();
        r.invalidations = granules.clone().map(|g| rec.hot.by_granule[g]).sum();
        r.blocks = (0..BLOCKS)
            .map(|b| {
                let sum = |op: usize| granules.clone().map(|g| rec.rw[b][g][op]).sum::<u64>();
                (b, sum(0), sum(1))
            })
            .filter(|&(_, reads, writes)| reads + writes > 0)
            .collect();
    }
    // Granules of a larger value say something only where they were accessed.
    rows.retain(|r| r.accessed() || r.parts.iter().any(|p| !p.opaque));
    rows
}
