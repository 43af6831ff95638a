//! A history entry: one thread and the bytes of a line it read and wrote since the line's
//! last write, packed into one word so that a store publishes it whole.
//!
//! Exact byte masks take 128 bits; a word has 48 beside the thread id. Most accesses
//! cover whole 4-B granules (`u32`, `u64`, `u128` and larger atomics are aligned to at
//! least 4 B), so an entry keeps one bit per granule for reads and one for writes (32
//! bits) and the bytes of one partly touched granule (4 + 4 bits and its index). A
//! second partly touched granule is rounded up to all its 4 bytes: packing only ever
//! adds bytes, so it can turn a false invalidation into a true one, never the reverse.

use super::{GRANULE, GRANULES};

/// Bit `4 i` of each nibble.
const NIBBLE_LOW: u64 = 0x1111_1111_1111_1111;

/// One thread's touched bytes of a line: bit `b` is byte `b` (the line's bytes; a
/// block's history uses bits 0 and 1 for its two lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) tid: u16,
    pub(crate) read: u64,
    pub(crate) write: u64,
}

impl Entry {
    pub(crate) const EMPTY: Entry = Entry {
        tid: 0,
        read: 0,
        write: 0,
    };

    pub(crate) fn touched(self) -> u64 {
        self.read | self.write
    }

    /// The word a history slot stores: tid (16 bits), granules read (16), granules
    /// written (16), and the partly touched granule: index (4), read bytes (4),
    /// written bytes (4).
    pub(crate) fn pack(self) -> u64 {
        let partial = (any(self.read) & !full(self.read)) | (any(self.write) & !full(self.write));
        let (detail, keep) = if partial == 0 {
            (0, !0u16)
        } else {
            let g = partial.trailing_zeros();
            let nib = |m: u64| (m >> (GRANULE as u32 * g)) & 0xf;
            (
                u64::from(g) | nib(self.read) << 4 | nib(self.write) << 8,
                !(1u16 << g),
            )
        };
        u64::from(self.tid)
            | u64::from(any(self.read) & keep) << 16
            | u64::from(any(self.write) & keep) << 32
            | detail << 48
    }

    pub(crate) fn unpack(w: u64) -> Entry {
        let g = (w >> 48) & 0xf;
        let shift = GRANULE as u64 * g;
        Entry {
            tid: w as u16,
            read: spread((w >> 16) as u16) | ((w >> 52) & 0xf) << shift,
            write: spread((w >> 32) as u16) | ((w >> 56) & 0xf) << shift,
        }
    }
}

/// The bytes `[offset, offset + len)` of a line, `len` in 1..=64 - offset.
pub(crate) fn bytes(offset: usize, len: usize) -> u64 {
    let ones = if len >= 64 { !0 } else { (1u64 << len) - 1 };
    ones << offset
}

/// An access to `[offset, offset + len)`: its bytes, and the granules it fills when it
/// is made of whole granules (0 otherwise), for the fast path of `Hot::observe_with`.
pub(crate) fn access(offset: usize, len: usize) -> (u64, u16) {
    let whole = if offset % GRANULE == 0 && len % GRANULE == 0 {
        ((1u32 << (len / GRANULE)) - 1) << (offset / GRANULE)
    } else {
        0
    };
    (bytes(offset, len), whole as u16)
}

/// Whether the packed entry `own` (0: none) has written, or touched, every granule in
/// `whole` (not 0), read off the granule bits.
#[inline(always)]
pub(crate) fn has_whole(own: u64, whole: u16, write: bool) -> bool {
    let (read, written) = ((own >> 16) as u16, (own >> 32) as u16);
    let has = if write { written } else { read | written };
    own != 0 && has & whole == whole
}

/// The packed entry `own` of thread `tid` (0: none yet) with `access` read or written
/// and `pending` read; `own` itself when it has them already. On the packed word when the
/// access fills whole granules and holds the pending bytes, else unpacked and packed
/// again.
pub(crate) fn with_access(
    own: u64,
    tid: u16,
    (mask, whole): (u64, u16),
    write: bool,
    pending: u64,
) -> u64 {
    if whole != 0 && pending & !mask == 0 {
        if has_whole(own, whole, write) {
            return own;
        }
        let shift = if write { 32 } else { 16 };
        return own | u64::from(tid) | u64::from(whole) << shift;
    }
    if own != 0 {
        let e = Entry::unpack(own);
        let has = if write { e.write } else { e.touched() };
        if has & mask == mask && e.touched() & pending == pending {
            return own;
        }
    }
    let mut e = if own == 0 {
        Entry {
            tid,
            ..Entry::EMPTY
        }
    } else {
        Entry::unpack(own)
    };
    e.read |= pending;
    if write {
        e.write |= mask;
    } else {
        e.read |= mask;
    }
    e.pack()
}

/// Granules with every byte set.
fn full(m: u64) -> u16 {
    gather(m & m >> 1 & m >> 2 & m >> 3 & NIBBLE_LOW)
}

/// Granules with any byte set.
fn any(m: u64) -> u16 {
    gather((m | m >> 1 | m >> 2 | m >> 3) & NIBBLE_LOW)
}

/// Bit `4 i` → bit `i`.
fn gather(mut x: u64) -> u16 {
    x = (x | x >> 3) & 0x0303_0303_0303_0303;
    x = (x | x >> 6) & 0x000f_000f_000f_000f;
    x = (x | x >> 12) & 0x0000_00ff_0000_00ff;
    (x | x >> 24) as u16
}

/// Bit `i` → all four bits of nibble `i`, by table: every tracked access unpacks an
/// entry, and two loads from a 1-KiB table cost less than the bit shuffle.
fn spread(g: u16) -> u64 {
    u64::from(SPREAD[usize::from(g & 0xff)]) | u64::from(SPREAD[usize::from(g >> 8)]) << 32
}

/// `SPREAD[b]`: nibble `i` set for each bit `i` of `b`.
static SPREAD: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        let mut i = 0;
        while i < 8 {
            if b >> i & 1 == 1 {
                table[b] |= 0xf << (4 * i);
            }
            i += 1;
        }
        b += 1;
    }
    table
};

const _: () = assert!(GRANULES == 16 && GRANULE * GRANULES == super::LINE);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_granules_and_one_partial_granule_round_trip_exactly() {
        let e = Entry {
            tid: 0xfffe,
            read: bytes(0, 8) | bytes(17, 1) | bytes(60, 4),
            write: bytes(16, 1) | bytes(32, 16),
        };
        assert_eq!(Entry::unpack(e.pack()), e);
        let lock = Entry {
            tid: 7,
            read: 0,
            write: bytes(4, 4),
        };
        assert_eq!(Entry::unpack(lock.pack()), lock);
        assert_eq!(Entry::unpack(Entry::EMPTY.pack()), Entry::EMPTY);
        assert_eq!(Entry::EMPTY.pack(), 0);
    }

    #[test]
    fn adding_whole_granules_on_the_packed_word_equals_unpacking() {
        let own = Entry {
            tid: 9,
            read: bytes(1, 1),
            write: bytes(8, 8),
        }
        .pack();
        let fast = with_access(own, 9, access(16, 4), true, 0);
        let slow = with_access(own, 9, (bytes(16, 4), 0), true, 0);
        assert_eq!(Entry::unpack(fast), Entry::unpack(slow));
        assert_eq!(Entry::unpack(fast).write, bytes(8, 12));
        let read = with_access(0, 9, access(4, 2), false, bytes(0, 1));
        // Two partly read granules: the second is rounded up.
        assert_eq!(Entry::unpack(read).read, bytes(0, 1) | bytes(4, 4));
        assert_eq!(with_access(read, 9, access(5, 1), false, 0), read);
        assert_eq!(with_access(fast, 9, access(8, 4), false, 0), fast);
    }

    #[test]
    fn a_second_partial_granule_rounds_up_to_its_four_bytes() {
        let e = Entry {
            tid: 3,
            read: bytes(1, 1),
            write: bytes(9, 2),
        };
        let back = Entry::unpack(e.pack());
        assert_eq!(back.read, bytes(1, 1));
        assert_eq!(back.write, bytes(8, 4));
    }

    #[test]
    fn spread_and_gather_are_inverse() {
        for g in [0u16, 1, 0x8000, 0xa5a5, 0xffff] {
            assert_eq!(any(spread(g)), g);
            assert_eq!(full(spread(g)), g);
        }
        assert_eq!(bytes(0, 64), !0);
        assert_eq!(access(8, 8), (0xff00, 0b1100));
        assert_eq!(access(2, 2), (0b1100, 0));
        assert_eq!(bytes(62, 2), 0xc000_0000_0000_0000);
    }
}
