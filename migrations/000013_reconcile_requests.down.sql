DROP TABLE reconcile_requests;
