"""A client for kforge's evaluation service (`kforge serve --eval`), standard library only.

    from kforge_client import Client
    client = Client("http://127.0.0.1:8765", token=None)
    task = client.add_task(open("task.py").read(), name="relu")
    results = client.evaluate(task, [candidate_a, candidate_b], seeds=3, timeout_s=120)  # per candidate
    for r in results:
        print(r["verdict"], r["speedup"])

Every result is the service's job object: "verdict", "verdict_kind", "accepted", "speedup",
"timings_meaningful", "candidate_ms", "reference_ms", "evaluation_id", and "evaluation" (the
full evidence) unless evidence=False; "status" is "error" with an "error" message when the task
itself could not be run. Errors of the service raise ServiceError with its status and message.
"""

import json
import time
import urllib.error
import urllib.request

__all__ = ["Client", "ServiceError", "reward"]

_FINISHED = ("done", "error", "expired")


class ServiceError(Exception):
    """The service refused a request (status: the HTTP status, 0 when it could not be reached)."""

    def __init__(self, status, message):
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


class Client:
    def __init__(self, url, token=None, timeout_s=120.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def _call(self, method, path, body=None, timeout_s=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s or self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            try:
                message = json.loads(text).get("error", text)
            except ValueError:
                message = text
            raise ServiceError(error.code, message) from None
        except (urllib.error.URLError, OSError) as error:
            raise ServiceError(0, f"cannot reach {self.url}: {error}") from None

    def health(self):
        return self._call("GET", "/v1/health")

    def queue(self):
        return self._call("GET", "/v1/queue")

    def add_task(self, source, name="task"):
        """Registers a task (KernelBench format) and returns its hash."""
        return self._call("POST", "/v1/tasks", {"source": source, "name": name})["task_hash"]

    def submit(self, task_hash, candidate, **options):
        """Queues one candidate; returns its id."""
        body = {"task_hash": task_hash, "candidate": candidate}
        if options:
            body["options"] = options
        return self._call("POST", "/v1/evaluations", body)["id"]

    def submit_batch(self, task_hash, candidates, **options):
        """Queues several candidates of one task; returns their ids in order."""
        body = {"task_hash": task_hash, "candidates": list(candidates)}
        if options:
            body["options"] = options
        return self._call("POST", "/v1/batch", body)["ids"]

    def result(self, job_id, wait_s=0, evidence=True):
        query = f"?wait_s={wait_s}" + ("" if evidence else "&evidence=0")
        return self._call("GET", f"/v1/evaluations/{int(job_id)}{query}", timeout_s=wait_s + self.timeout_s)

    def wait(self, ids, within_s=None, evidence=True, poll_s=30):
        """The results of `ids` in order, once all are finished (TimeoutError after within_s)."""
        ids = list(ids)
        deadline = None if within_s is None else time.monotonic() + within_s
        finished = {}
        while len(finished) < len(ids):
            pending = [i for i in ids if i not in finished]
            wait = poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic()))
            reply = self._call("POST", "/v1/results", {"ids": pending, "wait_s": wait, "evidence": evidence},
                               timeout_s=wait + self.timeout_s)
            for job in reply["results"]:
                if job["status"] in _FINISHED:
                    finished[job["id"]] = job
            if deadline is not None and time.monotonic() >= deadline and len(finished) < len(ids):
                raise TimeoutError(f"{len(ids) - len(finished)} of {len(ids)} evaluation(s) not finished")
        return [finished[i] for i in ids]

    def evaluate(self, task_hash, candidates, within_s=None, evidence=True, **options):
        """Submits the candidates as one batch and returns their results in order. `options` are the
        service's (seeds, timeout_s for each candidate's process, mode, precision, timing);
        `within_s` bounds the whole wait."""
        return self.wait(self.submit_batch(task_hash, candidates, **options), within_s=within_s, evidence=evidence)


def reward(result, failed=-1.0):
    """One number per result, for a reinforcement-learning loop: `failed` unless accepted; else
    the speedup over the reference where the timings mean something (on a GPU), else 1.0."""
    if result.get("status") != "done" or not result.get("accepted"):
        return failed
    speedup = result.get("speedup")
    return float(speedup) if result.get("timings_meaningful") and speedup else 1.0
