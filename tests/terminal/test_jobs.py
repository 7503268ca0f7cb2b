import threading

import pytest

from dsh_magics.errors import NoSuchJob
from dsh_magics.jobs import Job, JobTable, new_job_id


def test_ids_are_random_and_prefixed():
    ids = {new_job_id("bash") for _ in range(1000)}
    assert len(ids) == 1000
    assert all(i.startswith("bash-") and len(i) == 5 + 32 for i in ids)


def test_settle_once_wakes_waiters_and_listeners():
    job = Job("bash", "s")
    seen = []
    job.add_done_listener(lambda j: seen.append(j.status))
    t = threading.Thread(target=lambda: job.settle("completed", 42))
    assert job.wait(0.01) is False
    t.start()
    assert job.wait(10)
    t.join()
    assert job.result == 42 and seen == ["completed"]
    assert job.settle("interrupted") is False
    late = []
    job.add_done_listener(lambda j: late.append(j.id))
    assert late == [job.id]


def test_cancel_calls_producer():
    called = []
    job = Job("bash", "s", canceller=lambda j: called.append(j.id))
    job.cancel()
    assert called == [job.id]


def test_table_keeps_bounded_finished_jobs():
    table = JobTable(keep_finished=5)
    jobs = [table.add(Job("bash", "s")) for _ in range(10)]
    for j in jobs:
        j.settle("completed")
    with pytest.raises(NoSuchJob):
        table.get(jobs[0].id)
    assert table.get(jobs[-1].id) is jobs[-1]
    assert table.latest("s") is jobs[-1]


def test_a_settled_job_lets_go_of_its_canceller() -> None:
    """A finished job stays listed (the newest 1,000), but nothing is left to
    cancel: it must not keep its producer (a closed terminal with its ring
    and screen) alive; benchmarks/soak.py saw RSS grow with each terminal
    closed and reopened."""
    import gc
    import weakref

    class Producer:
        def stop(self, job: Job) -> None:
            pass

    producer = Producer()
    gone = weakref.ref(producer)
    job = Job("bash", "s", canceller=producer.stop)
    del producer
    gc.collect()
    assert gone() is not None  # a running job can still be cancelled
    job.settle("completed")
    gc.collect()
    assert gone() is None
