DROP TABLE IF EXISTS runner_instances;
DROP TABLE IF EXISTS downstreams;
