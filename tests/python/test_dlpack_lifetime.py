"""Who keeps DLPack memory alive, and for how long: capsules nobody adopted, capsules
a consumer renamed, deleters on threads without the GIL and after the interpreter
has finalized, many threads at once, and a million round trips with flat memory."""

import gc
import os
import threading
import weakref
from pathlib import Path

import numpy as np
import producer
import pytest

import tack


def test_unadopted_capsule_releases_the_array(cp):
    made, deleted = cp.counts()
    a = tack.from_dlpack(cp.make((16,)))
    for mv in [None, (1, 0)]:
        capsule = a.__dlpack__(max_version=mv)
        del capsule  # nobody adopted it: its destructor releases the export
    del a
    assert cp.counts() == (made + 1, deleted + 1)


def test_renamed_capsule_does_nothing_when_collected(cp):
    made, deleted = cp.counts()
    a = tack.from_dlpack(cp.make((16,)))
    capsule = a.__dlpack__(max_version=(1, 0))
    handle = cp.adopt(capsule)
    del capsule, a
    gc.collect()
    assert cp.counts()[1] == deleted  # the consumer still holds the export
    cp.delete_now(handle)
    assert cp.counts() == (made + 1, deleted + 1)


def test_deleter_on_a_thread_without_the_gil(cp):
    # The export holds an array_from_ptr over a NumPy array, so the last release
    # must take the GIL to release the Py_buffer: from a thread that never had it.
    x = np.arange(1000, dtype=np.float64)
    alive = weakref.ref(x)
    view = tack.array_from_ptr(x, (1000,), tack.f64)
    handles = [cp.adopt(view.__dlpack__(max_version=(1, 0))),
               cp.adopt(view.reshape(10, 100).__dlpack__(max_version=(1, 0)))]
    del x, view
    gc.collect()
    assert alive() is not None
    for h in handles:
        cp.delete_in_thread(h)
    gc.collect()
    assert alive() is None


def test_deleter_of_an_import_on_another_thread(cp):
    made, deleted = cp.counts()
    a = tack.from_dlpack(cp.make((8,), versioned=False))
    handle = cp.adopt(a.__dlpack__())
    del a
    cp.delete_in_thread(handle)
    assert cp.counts() == (made + 1, deleted + 1)


def test_numpy_views_of_tack_arrays_outlive_tack(cp):
    made, deleted = cp.counts()
    n = np.from_dlpack(tack.from_dlpack(cp.make((6,))))
    gc.collect()
    assert cp.counts()[1] == deleted
    assert n.tolist() == [0, 1, 2, 3, 4, 5]
    del n
    assert cp.counts() == (made + 1, deleted + 1)


EXIT_SCRIPT = """
import sys
sys.path.insert(0, {build_dir!r})
import numpy as np
import counting_producer as cp
import tack

keep = []
# unadopted capsules of every kind, alive at exit
a = tack.array(np.arange(100, dtype=np.float32))
keep.append(a.__dlpack__())
keep.append(a.__dlpack__(max_version=(1, 0)))
# a capsule in a reference cycle
cycle = [a.__dlpack__(max_version=(1, 0))]
cycle.append(cycle)
# exports adopted by a consumer that calls the deleters after Py_Finalize: over
# Tack memory, over an import from the producer, and over a Py_buffer hold
x = np.arange(50, dtype=np.float64)
held = tack.array_from_ptr(x, (50,), tack.f64, writable=True)
imported = tack.from_dlpack(cp.make((8,)))
for arr in [a, held, imported, held.reshape(5, 10)]:
    cp.delete_at_exit(cp.adopt(arr.__dlpack__(max_version=(1, 0))))
# Tack arrays holding producer tensors and Py_buffers, alive at exit
keep += [tack.from_dlpack(cp.make((4,))), held, np.from_dlpack(held)]
# a NumPy array over a Tack export, alive at exit
keep.append(np.from_dlpack(tack.zeros(10)))
print("ready", flush=True)
"""


def test_capsules_and_holds_alive_at_interpreter_exit(cp):
    producer.check_alive_at_exit(EXIT_SCRIPT)


def test_eight_threads_exchanging_at_once(cp):
    made, deleted = cp.counts()
    errors = []
    barrier = threading.Barrier(8)

    def work(seed):
        try:
            barrier.wait()
            base = tack.array(np.arange(64, dtype=np.float32) + seed)
            for k in range(2000):
                n = np.from_dlpack(base)
                t = tack.from_dlpack(n)
                if k % 100 == 0:
                    t2 = tack.from_dlpack(cp.make((8,), versioned=bool(k % 200)))
                    h = cp.adopt(t2.__dlpack__(max_version=(1, 0)))
                    del t2
                    cp.delete_in_thread(h)
                assert t[3] == 3.0 + seed
                del n, t
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    made2, deleted2 = cp.counts()
    assert made2 - made == 8 * 20
    assert deleted2 - deleted == made2 - made


def _rss_kib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc")
def test_a_million_round_trips_keep_memory_flat():
    a = tack.array(np.arange(256, dtype=np.float32))
    x = np.arange(256, dtype=np.float64)

    def rounds(n):
        for _ in range(n):
            # Tack -> NumPy -> Tack, and NumPy -> Tack -> NumPy
            tack.from_dlpack(np.from_dlpack(a))
            np.from_dlpack(tack.from_dlpack(x))

    rounds(50_000)
    gc.collect()
    before = _rss_kib()
    rounds(500_000)  # two exchanges each: a million round trips
    gc.collect()
    grown = _rss_kib() - before
    assert grown < 2048, f"RSS grew by {grown} KiB"
    assert tack.from_dlpack(np.from_dlpack(a))[255] == 255.0


def test_import_hold_survives_interpreter_gc_of_the_capsule(cp):
    made, deleted = cp.counts()
    c = cp.make((5,))
    a = tack.from_dlpack(c)
    del c
    gc.collect()
    assert cp.counts()[1] == deleted
    assert a.numpy().tolist() == [0, 1, 2, 3, 4]
    del a
    assert cp.counts()[1] == deleted + 1
