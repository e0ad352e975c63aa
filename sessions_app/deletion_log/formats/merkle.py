"""RFC 6962 Merkle tree hashing, inclusion and consistency proofs (RFC 9162 §2.1), over SHA-256.

Written here because no maintained Python library fits: pymerkle (maintained) hashes an RFC 6962
shaped tree but hands out proofs in its own rule/subset/path format, not the bare RFC 6962 hash
lists that a C2SP tlog-proof carries, and no other package found on PyPI (merkletools, merkle-py,
merkleproof, ...) offers RFC 6962 inclusion and consistency proofs; the tests hold this module to
transparency-dev/merkle's published vectors.

A root or proof is computed from the hashes of O(log n) complete subtrees (`TreeProofs`). The
server stores each complete subtree's hash when its last leaf is appended (`RightEdge.append`
returns them) and reads back only those a proof needs (`NodesNeeded`, then `StoredNodes`), so a
proof at any size costs O(log n) rows and no memory that grows with the log. `MerkleTree` keeps
the whole tree in memory: for tests and the offline tools.
"""

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from sessions_app.deletion_log.formats.strict import Rejected

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _left_width(width: int) -> int:
    """The number of leaves under the left child of a node over `width` >= 2 leaves: the largest
    power of two below `width` (RFC 6962's k)."""
    return 1 << ((width - 1).bit_length() - 1)


def post_order(height: int, index: int) -> int:
    """Where the complete subtree over the 2**height leaves from index * 2**height on comes in
    the order subtrees complete as leaves are appended (post-order): leaf i comes at
    2i - popcount(i), then the subtrees it completes, smallest first. So the subtrees completed by
    leaves [start, end) are the positions [post_order(0, start), post_order(0, end))."""
    last = ((index + 1) << height) - 1
    return 2 * last - last.bit_count() + height


class TreeProofs:
    """Roots and RFC 6962 proofs over a tree of len(self) leaves, from its complete subtrees'
    hashes (`_node`). A node's first leaf is a multiple of its width rounded up to a power of two,
    so a node over 2**h leaves is a complete subtree; a node on the right edge is its complete left
    child and its right child: a root or a proof takes O(log n) complete subtrees."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _node(self, height: int, index: int) -> bytes:
        """The hash of the complete subtree over the 2**height leaves from index * 2**height on."""
        raise NotImplementedError

    def root(self, size: int | None = None) -> bytes:
        size = self._size(size)
        return self._hash(0, size) if size else EMPTY_ROOT

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """RFC 6962 §2.1.1 PATH: the leaf's sibling first, the root's child last."""
        size = self._size(size)
        if not 0 <= index < size:
            raise IndexError(f"no leaf {index} in a tree of {size}")
        return self._path(index, 0, size)

    def consistency_proof(self, old_size: int, size: int | None = None) -> list[bytes]:
        """RFC 6962 §2.1.2 PROOF(old_size, D[size])."""
        size = self._size(size)
        if not 0 < old_size <= size:
            raise IndexError(f"no consistency proof from {old_size} to {size} leaves")
        return self._subproof(old_size, 0, size, True)

    def _size(self, size: int | None) -> int:
        if size is None:
            return len(self)
        if not 0 <= size <= len(self):
            raise IndexError(f"the tree has {len(self)} leaves, not {size}")
        return size

    def _hash(self, start: int, end: int) -> bytes:
        """MTH(D[start:end]) for a node of the tree."""
        width = end - start
        height = width.bit_length() - 1
        if width == 1 << height:
            return self._node(height, start >> height)
        middle = start + _left_width(width)
        return node_hash(self._hash(start, middle), self._hash(middle, end))

    def _path(self, index: int, start: int, end: int) -> list[bytes]:
        if end - start == 1:
            return []
        middle = start + _left_width(end - start)
        if index < middle:
            return self._path(index, start, middle) + [self._hash(middle, end)]
        return self._path(index, middle, end) + [self._hash(start, middle)]

    def _subproof(self, old_end: int, start: int, end: int, old_is_whole_node: bool) -> list[bytes]:
        """SUBPROOF(m, D[start:end], b) with m = old_end - start."""
        if old_end == end:
            return [] if old_is_whole_node else [self._hash(start, end)]
        middle = start + _left_width(end - start)
        if old_end <= middle:
            return self._subproof(old_end, start, middle, old_is_whole_node) + [self._hash(middle, end)]
        return self._subproof(old_end, middle, end, False) + [self._hash(start, middle)]


class MerkleTree(TreeProofs):
    """The tree over a log's leaf hashes, growing by `append`, in memory; roots and proofs at any
    past size. (The server's log keeps its subtrees in the database instead: `StoredNodes`.)"""

    def __init__(self, leaf_hashes: Iterable[bytes] = ()):
        # _levels[h][i] is the hash of the complete subtree over the 2**h leaves from i * 2**h on.
        self._levels: list[list[bytes]] = [[]]
        for leaf in leaf_hashes:
            self.append(leaf)

    def __len__(self) -> int:
        return len(self._levels[0])

    def append(self, leaf: bytes) -> None:
        if len(leaf) != HASH_SIZE:
            raise ValueError("a leaf hash is 32 bytes")
        self._levels[0].append(leaf)
        height = 0
        while len(self._levels[height]) % 2 == 0:  # completes a subtree one level up
            left, right = self._levels[height][-2:]
            if height + 1 == len(self._levels):
                self._levels.append([])
            self._levels[height + 1].append(node_hash(left, right))
            height += 1

    def _node(self, height: int, index: int) -> bytes:
        return self._levels[height][index]


class NodesNeeded(TreeProofs):
    """Which complete subtrees a root or proof of a tree of `size` leaves reads: call the root or
    proof on it (its hashes are placeholders), then read `wanted`, (height, index) pairs."""

    def __init__(self, size: int):
        self._leaves = size
        self.wanted: set[tuple[int, int]] = set()

    def __len__(self) -> int:
        return self._leaves

    def _node(self, height: int, index: int) -> bytes:
        self.wanted.add((height, index))
        return bytes(HASH_SIZE)


class StoredNodes(TreeProofs):
    """A tree of `size` leaves of which only some complete subtrees' hashes are at hand, by
    (height, index): enough for the roots and proofs they were read for (`NodesNeeded`)."""

    def __init__(self, size: int, nodes: Mapping[tuple[int, int], bytes]):
        self._leaves = size
        self._nodes = nodes

    def __len__(self) -> int:
        return self._leaves

    def _node(self, height: int, index: int) -> bytes:
        return self._nodes[height, index]


class RightEdge:
    """A tree's right edge: the hash of each complete subtree along it, largest first (RFC 6962's
    compact range from the first leaf), one per 1-bit of the size. Enough to append a leaf and to
    compute the root in O(log n) hashes without any earlier leaf, so a log's writer keeps it with
    its latest checkpoint instead of reading every leaf back."""

    def __init__(self, size: int = 0, hashes: Sequence[bytes] = ()):
        if size < 0 or len(hashes) != size.bit_count() or any(len(value) != HASH_SIZE for value in hashes):
            raise ValueError(f"a right edge of {size} leaves is {size.bit_count()} hashes of 32 bytes")
        self.size = size
        self._hashes = list(hashes)

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Appends a leaf; returns the subtrees it completes above it, (height, index, hash),
        smallest first (the server stores them: the proofs read them back)."""
        if len(leaf) != HASH_SIZE:
            raise ValueError("a leaf hash is 32 bytes")
        node, size, height, completed = leaf, self.size, 0, []
        while size & 1:  # the new leaf completes the smallest subtrees on the edge
            node = node_hash(self._hashes.pop(), node)
            size, height = size >> 1, height + 1
            completed.append((height, self.size >> height, node))
        self._hashes.append(node)
        self.size += 1
        return completed

    def root(self) -> bytes:
        if not self._hashes:
            return EMPTY_ROOT
        root = self._hashes[-1]
        for left in reversed(self._hashes[:-1]):
            root = node_hash(left, root)
        return root

    def to_bytes(self) -> bytes:
        return b"".join(self._hashes)

    @classmethod
    def from_bytes(cls, size: int, data: bytes) -> "RightEdge":
        return cls(size, [data[start : start + HASH_SIZE] for start in range(0, len(data), HASH_SIZE)])


def _check_hashes(hashes: Sequence[bytes], what: str) -> None:
    if any(len(value) != HASH_SIZE for value in hashes):
        raise Rejected(f"{what} holds a hash that is not 32 bytes")


def _shift_while_even(first: int, last: int) -> tuple[int, int]:
    # RFC 9162: right-shift both until LSB(first) is set or first is 0.
    while first and not first & 1:
        first, last = first >> 1, last >> 1
    return first, last


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    """Raises Rejected unless `proof` puts `leaf` at `index` in the tree of `size` leaves whose
    root is `root` (RFC 9162 §2.1.3.2)."""
    _check_hashes([leaf, root, *proof], "the inclusion proof")
    if not 0 <= index < size:
        raise Rejected(f"entry {index} cannot be in a log of {size}")
    position, last, computed = index, size - 1, leaf
    for sibling in proof:
        if last == 0:
            raise Rejected("the inclusion proof has too many hashes")
        if position & 1 or position == last:
            computed = node_hash(sibling, computed)
            position, last = _shift_while_even(position, last)
        else:
            computed = node_hash(computed, sibling)
        position, last = position >> 1, last >> 1
    if last != 0:
        raise Rejected("the inclusion proof has too few hashes")
    if computed != root:
        raise Rejected("the inclusion proof does not lead to the checkpoint's root")


def verify_consistency(old_size: int, size: int, proof: Sequence[bytes], old_root: bytes, root: bytes) -> None:
    """Raises Rejected unless `proof` shows the tree of `size` leaves with `root` extends the tree of
    `old_size` leaves with `old_root` (RFC 9162 §2.1.4.2; the edge cases as transparency-dev's)."""
    _check_hashes([old_root, root, *proof], "the consistency proof")
    if old_size > size:
        raise Rejected(f"the log shrank from {old_size} to {size} entries")
    if old_size == 0:
        raise Rejected("an empty log proves nothing to be consistent with")
    if old_size == size:
        if proof or old_root != root:
            raise Rejected(f"two different logs of {size} entries")
        return
    if not proof:
        raise Rejected("the consistency proof is empty")
    path = [old_root, *proof] if old_size & (old_size - 1) == 0 else list(proof)
    position, last = old_size - 1, size - 1
    while position & 1:
        position, last = position >> 1, last >> 1
    old_computed = computed = path[0]
    for node in path[1:]:
        if last == 0:
            raise Rejected("the consistency proof has too many hashes")
        if position & 1 or position == last:
            old_computed, computed = node_hash(node, old_computed), node_hash(node, computed)
            position, last = _shift_while_even(position, last)
        else:
            computed = node_hash(computed, node)
        position, last = position >> 1, last >> 1
    if last != 0:
        raise Rejected("the consistency proof has too few hashes")
    if old_computed != old_root:
        raise Rejected("the consistency proof does not lead to the older checkpoint's root")
    if computed != root:
        raise Rejected("the consistency proof does not lead to the newer checkpoint's root")
