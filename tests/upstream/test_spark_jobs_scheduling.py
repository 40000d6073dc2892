"""Upstream's test/e2e/spark_jobs_scheduling/spark_jobs_scheduling_test.go (suite:
spark_jobs_scheduling_suite_test.go), not ported: it cannot apply to an emulator.

Its one spec, Test_With_Spark_Jobs, needs the images named by ``SPARK_IMAGE`` and ``SPARK_PYTHON_IMAGE``
and runs ``testdata/spark_jobs.sh``, which calls ``spark-submit`` from a Spark distribution in cluster mode.
The four applications it then reads from ``root.<namespace>`` exist only because each driver pod's JVM
starts and creates its executor pods through the API server, and the spec passes only when those drivers
end Succeeded after running their jobs. kubesim runs no containers, so no driver would create an
executor: a port could only script the pods Spark would have made, which would test that script rather
than the scheduler. Scheduling as Spark submits it (a driver, then executors of one application id, with
task groups) is covered by gang_scheduling and by ``tests/shim/test_gang.py``."""
