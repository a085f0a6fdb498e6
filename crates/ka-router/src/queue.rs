//! The drop-tail FIFO (limit in packets).

use std::collections::VecDeque;

/// A drop-tail packet queue that tracks the bytes it holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct DropTail {
    packets: VecDeque<Vec<u8>>,
    bytes: usize,
    limit: usize,
}

impl DropTail {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            // Grows on demand up to `limit`; don't reserve a stranger-sized
            // block up front.
            packets: VecDeque::new(),
            bytes: 0,
            limit,
        }
    }

    /// Appends `packet`, or hands it back if the queue is full.
    pub(crate) fn push(&mut self, packet: Vec<u8>) -> Result<(), Vec<u8>> {
        if self.packets.len() >= self.limit {
            return Err(packet);
        }
        self.bytes += packet.len();
        self.packets.push_back(packet);
        Ok(())
    }

    pub(crate) fn pop(&mut self) -> Option<Vec<u8>> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.len();
        Some(p)
    }

    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_tail_and_counts_bytes() {
        let mut q = DropTail::new(2);
        assert!(q.push(vec![0; 10]).is_ok());
        assert!(q.push(vec![1; 20]).is_ok());
        assert_eq!(q.push(vec![2; 30]), Err(vec![2; 30]));
        assert_eq!((q.len(), q.bytes()), (2, 30));
        assert_eq!(q.pop(), Some(vec![0; 10]));
        assert_eq!(q.bytes(), 20);
        assert!(q.push(vec![3; 5]).is_ok());
        assert_eq!(q.pop(), Some(vec![1; 20]));
        assert_eq!(q.pop(), Some(vec![3; 5]));
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
        assert_eq!(q.pop(), None);
    }
}
