"""Which job a magic means, and what of its output already answers a wait.

``%bash_wait JOB`` takes a full id or a unique prefix; ``--until`` first looks
at the output the job printed before the wait began.
"""

from __future__ import annotations

import dataclasses
import re

from .. import jobs
from ..errors import DshError, InvalidArgument, NoSuchJob
from ..terminal import Result
from ..terminal.api import Engine
from .values import snapshot

# A job id prefix shorter than this is not accepted (ids are random: eight
# characters are unique in practice, fewer invite a wrong match).
MIN_PREFIX = 8


def find_job(registry: Engine, job_id: str | None, session: str) -> jobs.Job:
    """The job ``job_id`` names (an id or a unique prefix), else the session's latest."""
    if job_id is None:
        job = registry.latest_job(session)
        if job is None:
            raise NoSuchJob(f"no job has run in session {session!r} yet")
        return job
    job_id = job_id.strip()
    try:
        return registry.job(job_id)
    except NoSuchJob:
        pass  # not a full id: try it as a prefix below
    # A unique prefix (at least MIN_PREFIX characters) is accepted for typing comfort.
    if len(job_id) >= MIN_PREFIX:
        found = [j for j in registry.jobs.all() if j.id.startswith(job_id)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise InvalidArgument(f"job id prefix {job_id!r} is ambiguous ({len(found)} jobs)")
    raise NoSuchJob(f"no job with id {job_id!r}")


def match_so_far(registry: Engine, job: jobs.Job, until: str) -> Result | None:
    """``--until`` looks at all of the job's output: a line that already
    matches (a re-run cell, a line printed before the wait) returns at once."""
    try:
        start = registry.result(job.id, tail_lines=0).start_line
        rr = registry.read(job.owner, since=start)
    except DshError:
        return None
    rx = re.compile(until)
    lines = list(rr.lines) + ([rr.partial] if rr.partial else [])
    for i, text in enumerate(lines):
        if rx.search(text):
            res = dataclasses.replace(
                snapshot(registry, job),
                reason="until",
                timed_out=False,
                match_line=rr.first_line + i,
                match_text=text[:1000],
            )
            res.note = f"matched line {res.match_line}: {res.match_text}"
            if res.done:  # it ended meanwhile: say so
                res = dataclasses.replace(res, reason="settled", note=None)
            return res
    return None
