"""Tensors handed between the C++ server and a Python worker in files both map (in /dev/shm where
there is one): a served call's inputs and outputs cross as bytes in memory, never as JSON.

A region is a file the writer grows with ftruncate; its tensors are named in the request or reply
by dtype, shape and offset (torch's dtype names without "torch."). The C++ side's half is
include/torchperf/process/shared_region.h and worker/python_served_model.h.
"""

import mmap
import os

# Each tensor starts on a 64-byte boundary, as the C++ side lays its inputs out.
ALIGN = 64


def aligned(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Region:
    """A file mapped into this process, re-mapped when it is another file or another size."""

    def __init__(self):
        self.path, self.size, self.map = None, 0, None

    def mapped(self, path, size):
        if self.map is None or path != self.path or size != self.size:
            self.close()
            with open(path, "r+b") as f:
                self.map = mmap.mmap(f.fileno(), size) if size else None
            self.path, self.size = path, size
        return self.map

    def grown(self, path, size):
        """The file at path, created or grown to at least size, mapped."""
        if self.path == path and self.size >= size:
            return self.map
        self.close()
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            size = max(size, ALIGN)
            if os.fstat(fd).st_size < size:
                os.ftruncate(fd, size)
            size = os.fstat(fd).st_size
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.path, self.size = path, size
        return self.map

    def close(self):
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # a tensor still views it: unmapped when the last one goes
                pass
        self.path, self.size, self.map = None, 0, None


def dtype_of(name):
    import torch

    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"dtype '{name}': not a torch dtype")
    return dtype


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def read_tensors(region, entries):
    """The tensors the entries name ({"dtype", "shape", "offset"}), as views of the region: no
    copy (the C++ side does not touch the region until this call has answered)."""
    import torch

    tensors = []
    for e in entries:
        dtype, shape, offset = dtype_of(e["dtype"]), list(e["shape"]), int(e["offset"])
        count = 1
        for s in shape:
            count *= int(s)
        if count == 0:
            tensors.append(torch.empty(shape, dtype=dtype))
            continue
        size = count * torch.empty((), dtype=dtype).element_size()
        if offset < 0 or region is None or offset + size > len(region):
            raise ValueError(f"a {e['dtype']}{shape} tensor at offset {offset} lies past the "
                             f"region's {0 if region is None else len(region)} bytes")
        tensors.append(torch.frombuffer(region, dtype=dtype, count=count, offset=offset)
                       .view(shape))
    return tensors


def write_tensors(region, path, tensors):
    """The tensors copied into the region at path (grown as needed), each on the CPU and
    contiguous; their entries, and the region's size, for the reply."""
    import torch

    tensors = [t.detach().to("cpu").contiguous() for t in tensors]
    entries, offset = [], 0
    for t in tensors:
        entries.append({"dtype": dtype_name(t.dtype), "shape": list(t.shape), "offset": offset})
        offset = aligned(offset + t.numel() * t.element_size())
    buffer = region.grown(path, offset)
    for t, e in zip(tensors, entries):
        if t.numel():
            torch.frombuffer(buffer, dtype=t.dtype, count=t.numel(),
                             offset=e["offset"]).copy_(t.reshape(-1))
    return entries, region.size
