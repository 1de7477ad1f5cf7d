DROP INDEX audit_log_outcome;
DROP INDEX audit_log_target;
DROP INDEX audit_log_action;
DROP INDEX audit_log_actor;
DROP TABLE alert_silences;
DROP TABLE alert_history;
