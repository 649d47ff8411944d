"""The set-based engine against the row-at-a-time reference applier, on generated workloads
(hypothesis, derandomized): same silver tables, error queue, counters, watermarks, abort state."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings

from lakeapply.runtime.catalog import Catalog
from tests.reference.workloads import workloads
from tests.silver.differential import Workload, engine_outcome, isolate, reference_outcome

_numbers = itertools.count(1)
SHARED = Catalog("differential")


@pytest.mark.parametrize("batches", [1, 3])
def test_engine_matches_the_reference_applier(spark, batches: int) -> None:
    @given(workloads())
    @hypothesis_settings(
        max_examples=5,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: each example costs Spark jobs
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    def check(workload: Workload) -> None:
        isolated = isolate(workload, next(_numbers))
        if batches > 1:  # one ingest batch per cycle: open transactions cross cycles in the spill
            settings, lcrs, initial = isolated
            isolated = (dataclasses.replace(settings, max_cycle_batches=1), lcrs, initial)
        expected = reference_outcome(isolated)
        actual = engine_outcome(spark, SHARED, isolated, batches=batches)
        if expected["aborted"]:
            # An aborted apply stops reading bronze: it never receives the later batches.
            for counter in ("received", "rolled_back"):
                del expected["counters"][counter], actual["counters"][counter]
            if batches > 1:
                # Nor their transactions: its oldest SCN is over what it received, so it can only
                # be at or above the reference's (which saw every batch).
                for source, oldest in actual.pop("oldest_scn").items():
                    reference_oldest = expected["oldest_scn"][source]
                    assert oldest is None or reference_oldest is None or oldest >= reference_oldest
                del expected["oldest_scn"]
        assert actual == expected

    check()
