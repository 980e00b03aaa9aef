//! Memory aligned for direct I/O: O_DIRECT needs buffers on the file
//! system's memory alignment (a page covers every file system seen).

use std::alloc::{Layout, alloc_zeroed, dealloc};

/// A zeroed, aligned, owned byte buffer.
#[derive(Debug)]
pub(crate) struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// `len` zero bytes aligned to `align` (a power of two).
    pub(crate) fn new(len: usize, align: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len.max(1), align.next_power_of_two())
            .expect("buffer sizes are far below isize::MAX");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        let ptr =
            std::ptr::NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, layout }
    }

    #[allow(clippy::len_without_is_empty)] // never empty: at least 1 byte
    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len()) }
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Fills the buffer with pseudo-random bytes (incompressible).
    pub(crate) fn fill_random(&mut self, rng: &mut fastrand::Rng) {
        for chunk in self.as_mut_slice().chunks_mut(8) {
            let word = rng.u64(..).to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// Makes the buffer's content unique for one write: the first 8 bytes
    /// of every 512-byte sector take `stamp`, so no two written blocks are
    /// equal and deduplicating storage cannot skip them (as fio's
    /// scramble_buffers does).
    pub(crate) fn stamp(&mut self, stamp: u64) {
        let bytes = stamp.to_le_bytes();
        for sector in self.as_mut_slice().chunks_mut(512) {
            // A fixed 8-byte copy is one store; a copy of a length known
            // only at run time is a call to memcpy, 2048 of them per 1 MiB
            // write (measured: ~10% of SEQ1M Q1T1's CPU per write).
            if let Some(head) = sector.first_chunk_mut::<8>() {
                *head = bytes;
            } else {
                let n = sector.len();
                sector.copy_from_slice(&bytes[..n]);
            }
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_stampable() {
        let mut b = AlignedBuf::new(8192, 4096);
        assert_eq!(b.as_mut_ptr() as usize % 4096, 0);
        assert!(b.as_slice().iter().all(|&x| x == 0));
        b.stamp(0x0102_0304_0506_0708);
        assert_eq!(
            &b.as_slice()[512..520],
            &0x0102_0304_0506_0708u64.to_le_bytes()
        );
        let mut rng = fastrand::Rng::with_seed(1);
        b.fill_random(&mut rng);
        assert!(b.as_slice().iter().filter(|&&x| x == 0).count() < 100);
    }
}
