//! Each call's memory budget (`tools.call_memory_bytes`).
//!
//! The binary's allocator is [`Metered`]: every allocation and free made while a call's future
//! is being polled is counted against that call. Rust cannot refuse an allocation gracefully,
//! so a call past its budget is stopped at its next checkpoint instead: a parsing step
//! ([`parse_note`]), its commit, or its answer. It then answers `compute_budget_exceeded` and
//! nothing is written; a call that already committed keeps its answer.
//!
//! Frees are counted against whichever call is polled when they happen, so a call that frees
//! memory another made can run below zero; only growth past the budget matters.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};
use std::task::{Context, Poll};

use otc_errors::{ErrorCode, ToolError};

/// One call's account.
#[derive(Debug)]
pub struct CallMemory {
    used: AtomicIsize,
    peak: AtomicIsize,
    limit: isize,
    exceeded: AtomicBool,
    committed: AtomicBool,
}

impl CallMemory {
    /// An account holding the call to `limit` bytes (0: no limit).
    pub fn new(limit: u64) -> Arc<Self> {
        let limit = if limit == 0 { isize::MAX } else { isize::try_from(limit).unwrap_or(isize::MAX) };
        Arc::new(Self {
            used: AtomicIsize::new(0),
            peak: AtomicIsize::new(0),
            limit,
            exceeded: AtomicBool::new(false),
            committed: AtomicBool::new(false),
        })
    }

    /// The most this call held at once beyond what it started with.
    pub fn peak(&self) -> u64 {
        self.peak.load(Relaxed).max(0) as u64
    }

    pub fn exceeded(&self) -> bool {
        self.exceeded.load(Relaxed)
    }

    fn add(&self, delta: isize) {
        let now = self.used.fetch_add(delta, Relaxed).saturating_add(delta);
        if delta > 0 {
            self.peak.fetch_max(now, Relaxed);
            if now > self.limit {
                self.exceeded.store(true, Relaxed);
            }
        }
    }

    /// The refusal of a call past this budget.
    pub fn refusal(&self) -> ToolError {
        let limit = if self.limit == isize::MAX { 0 } else { self.limit as u64 };
        ToolError::with_message(
            ErrorCode::ComputeBudgetExceeded,
            format!(
                "this call needed more than its memory budget of {limit} bytes (tools.call_memory_bytes); nothing \
                 was written. Ask for less at once: a paged read (read_note's cursor), a section, or fewer notes"
            ),
        )
        .detail("limit", "tools.call_memory_bytes")
        .detail("limit_bytes", limit)
    }
}

thread_local! {
    /// The account of the call this thread is polling (null: none).
    static CURRENT: Cell<*const CallMemory> = const { Cell::new(std::ptr::null()) };
}

fn account(delta: isize) {
    // `try_with`: an allocation while the thread's locals are torn down counts for nothing.
    let _ = CURRENT.try_with(|current| {
        let at = current.get();
        if !at.is_null() {
            // SAFETY: the pointer is set only while `Metering::poll` holds an `Arc` of it.
            unsafe { &*at }.add(delta);
        }
    });
}

/// The global allocator `A`, counting each call's allocations against its account.
pub struct Metered<A>(pub A);

// SAFETY: every method forwards to `A` unchanged; counting touches no allocation.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Metered<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as isize);
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        account(layout.size() as isize);
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        account(-(layout.size() as isize));
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        account(new_size as isize - layout.size() as isize);
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

/// `future`, with every allocation made while it is polled counted against `memory`.
pub fn metered<F: Future>(memory: Arc<CallMemory>, future: F) -> Metering<F> {
    Metering { memory, future: Box::pin(future) }
}

pub struct Metering<F> {
    memory: Arc<CallMemory>,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for Metering<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let previous = CURRENT.with(|current| current.replace(Arc::as_ptr(&this.memory)));
        // Put back on the way out, a panic's unwinding included: the account may be gone once
        // the call's answer is made, and nothing may count against it after that.
        let _restore = Restore(previous);
        this.future.as_mut().poll(cx)
    }
}

/// Puts the account that was current back when dropped.
struct Restore(*const CallMemory);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|current| current.set(self.0));
    }
}

fn with_current<T>(f: impl FnOnce(&CallMemory) -> T) -> Option<T> {
    CURRENT
        .try_with(|current| {
            let at = current.get();
            // SAFETY: as in `account`.
            (!at.is_null()).then(|| f(unsafe { &*at }))
        })
        .ok()
        .flatten()
}

/// Whether the call this thread is running has gone past its budget.
pub fn exceeded() -> bool {
    with_current(CallMemory::exceeded).unwrap_or(false)
}

/// The checkpoint before a commit: the refusal when the running call is past its budget.
pub fn check() -> Result<(), ToolError> {
    match with_current(|m| m.exceeded().then(|| m.refusal())) {
        Some(Some(refusal)) => Err(refusal),
        _ => Ok(()),
    }
}

/// Marks the running call as having committed: past this its answer stands whatever it uses.
pub fn committed() {
    with_current(|m| m.committed.store(true, Relaxed));
}

/// Whether the call that `memory` accounts for committed a change.
pub fn has_committed(memory: &CallMemory) -> bool {
    memory.committed.load(Relaxed)
}

/// Parses a note, stopping with the budget's refusal when the running call goes past it.
pub fn parse_note(text: &str) -> Result<otc_parser::Note, ToolError> {
    otc_parser::parse_cancellable(text, &exceeded).map_err(|otc_parser::Cancelled| {
        with_current(CallMemory::refusal).unwrap_or_else(|| ToolError::new(ErrorCode::ComputeBudgetExceeded))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_call_leaves_no_account_behind() {
        let memory = CallMemory::new(0);
        let mut call = metered(memory.clone(), async { panic!("a bug") });
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Pin::new(&mut call).poll(&mut cx)));
        assert!(polled.is_err());
        assert!(CURRENT.with(|current| current.get().is_null()), "the account was put back on unwinding");
    }

    #[test]
    fn an_account_notes_its_peak_and_when_it_passes_its_limit() {
        let memory = CallMemory::new(100);
        memory.add(60);
        memory.add(-50);
        memory.add(30);
        assert_eq!(memory.peak(), 60);
        assert!(!memory.exceeded());
        memory.add(90);
        assert!(memory.exceeded());
        assert_eq!(memory.refusal().code, ErrorCode::ComputeBudgetExceeded);
        assert!(!CallMemory::new(0).exceeded());
    }
}
