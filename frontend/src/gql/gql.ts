/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  fragment AlertFields on Alert {\n    id\n    kind\n    severity\n    jobName\n    target\n    message\n    value\n    since\n    run {\n      id\n    }\n  }\n": typeof types.AlertFieldsFragmentDoc,
    "\n  query Alerts {\n    alerts {\n      ...AlertFields\n    }\n  }\n": typeof types.AlertsDocument,
    "\n  subscription AlertRaised {\n    alertRaised {\n      ...AlertFields\n    }\n  }\n": typeof types.AlertRaisedDocument,
    "\n  query AuditLog($first: Int, $after: String) {\n    auditLog(first: $first, after: $after) {\n      nodes {\n        id\n        actor\n        action\n        target\n        arguments\n        outcome\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.AuditLogDocument,
    "\n  query Jobs($first: Int, $after: String) {\n    maintenance\n    jobs(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        description\n        cron\n        timezone\n        enabled\n        paused\n        nextScheduledAt\n        riskLevel\n        currentGeneration\n        activeRun {\n          ...RunSummaryFields\n        }\n        lastRun {\n          ...RunSummaryFields\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.JobsDocument,
    "\n  query Job($name: String!) {\n    job(name: $name) {\n      id\n      name\n      description\n      cron\n      timezone\n      enabled\n      paused\n      nextScheduledAt\n      nextFireTimes(n: 5)\n      riskLevel\n      leaseSeconds\n      version\n      currentGeneration\n      updatedAt\n      updatedBy\n      activeRun {\n        ...RunSummaryFields\n      }\n      lastRun {\n        ...RunSummaryFields\n      }\n      ledgerSummary {\n        state\n        count\n      }\n    }\n  }\n": typeof types.JobDocument,
    "\n  query JobRuns($name: String!, $status: [RunStatus!], $first: Int, $after: String) {\n    job(name: $name) {\n      id\n      runs(status: $status, first: $first, after: $after) {\n        nodes {\n          ...RunSummaryFields\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n": typeof types.JobRunsDocument,
    "\n  query CronPreview($cron: String!, $timezone: String!) {\n    cronPreview(cron: $cron, timezone: $timezone, n: 5) {\n      valid\n      nextFireTimes\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.CronPreviewDocument,
    "\n  mutation StartJob($name: String!, $mode: RunMode!) {\n    startJob(input: { name: $name, mode: $mode }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.StartJobDocument,
    "\n  mutation UpdateJobSchedule($input: UpdateJobScheduleInput!) {\n    updateJobSchedule(input: $input) {\n      job {\n        id\n        name\n        cron\n        timezone\n        enabled\n        leaseSeconds\n        nextScheduledAt\n        nextFireTimes(n: 5)\n        updatedAt\n        updatedBy\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.UpdateJobScheduleDocument,
    "\n  mutation PauseJob($name: String!) {\n    pauseJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.PauseJobDocument,
    "\n  mutation ResumeJob($name: String!) {\n    resumeJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.ResumeJobDocument,
    "\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    jobName\n    generation\n    targetKey\n    step\n    state\n    attempt\n    idempotencyKey\n    inputChanged\n    external\n    effectRef\n    evidenceRef\n    lastError\n    sameErrorCount\n    updatedAt\n    run {\n      id\n    }\n  }\n": typeof types.LedgerEntryFieldsFragmentDoc,
    "\n  query Ledger($jobName: String!, $state: [LedgerState!], $runId: ID, $targetPrefix: String, $first: Int, $after: String) {\n    ledger(jobName: $jobName, state: $state, runId: $runId, targetPrefix: $targetPrefix, first: $first, after: $after) {\n      nodes {\n        ...LedgerEntryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.LedgerDocument,
    "\n  mutation ResolveAmbiguous($input: ResolveAmbiguousInput!) {\n    resolveAmbiguous(input: $input) {\n      ledgerEntry {\n        ...LedgerEntryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.ResolveAmbiguousDocument,
    "\n  fragment ReconcileRequestFields on ReconcileRequest {\n    id\n    status\n    resultState\n    message\n    attempt\n    entry {\n      id\n      targetKey\n      state\n    }\n  }\n": typeof types.ReconcileRequestFieldsFragmentDoc,
    "\n  mutation ReconcileEntry($entryId: ID!) {\n    reconcileEntry(input: { entryId: $entryId }) {\n      reconcileRequest {\n        ...ReconcileRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.ReconcileEntryDocument,
    "\n  subscription ReconcileRequest($id: ID!) {\n    reconcileRequest(id: $id) {\n      ...ReconcileRequestFields\n    }\n  }\n": typeof types.ReconcileRequestDocument,
    "\n  fragment PreflightFields on ReplayPreflight {\n    jobName\n    kind\n    generation\n    scope\n    riskLevel\n    confirmed\n    failedByClass {\n      state\n      count\n    }\n    ambiguous\n    inFlight\n    targetsInScope\n    fixQueue\n    lastCheckpointAgeSeconds\n    downstreamErrorRate\n    downstreamCalls\n    jobVersionChanged\n    runJobVersion\n    currentJobVersion\n    requiresApproval\n    approvalReasons\n    blocked\n    blockingReasons\n    checks {\n      name\n      value\n      threshold\n      verdict\n      detail\n    }\n    computedAt\n  }\n": typeof types.PreflightFieldsFragmentDoc,
    "\n  query ReplayPreflight($runId: ID!, $scope: ReplayScope!) {\n    run(id: $runId) {\n      id\n      jobName\n      status\n      generation\n      startedAt\n      finishedAt\n      job {\n        id\n        name\n        riskLevel\n      }\n    }\n    replayPreflight(runId: $runId, scope: $scope) {\n      ...PreflightFields\n    }\n  }\n": typeof types.ReplayPreflightDocument,
    "\n  fragment ReplayRequestFields on ReplayRequest {\n    id\n    kind\n    generation\n    scope\n    status\n    reason\n    compensationRef\n    requestedBy\n    decidedBy\n    decisionNote\n    createdAt\n    decidedAt\n    executedAt\n    job {\n      id\n      name\n      riskLevel\n    }\n    sourceRun {\n      id\n      status\n    }\n    replayRun {\n      id\n      status\n    }\n    preflight {\n      ...PreflightFields\n    }\n  }\n": typeof types.ReplayRequestFieldsFragmentDoc,
    "\n  query ReplayRequests($status: [ReplayStatus!], $first: Int, $after: String) {\n    replayRequests(status: $status, first: $first, after: $after) {\n      nodes {\n        ...ReplayRequestFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.ReplayRequestsDocument,
    "\n  mutation RequestReplay($input: RequestReplayInput!) {\n    requestReplay(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.RequestReplayDocument,
    "\n  mutation ApproveReplay($requestId: ID!, $note: String) {\n    approveReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.ApproveReplayDocument,
    "\n  mutation RejectReplay($requestId: ID!, $note: String) {\n    rejectReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.RejectReplayDocument,
    "\n  query RestartPreflight($name: String!) {\n    restartPreflight(name: $name) {\n      ...PreflightFields\n    }\n  }\n": typeof types.RestartPreflightDocument,
    "\n  mutation RequestRestart($input: RequestRestartInput!) {\n    requestRestart(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.RequestRestartDocument,
    "\n  mutation ExecuteReplay($requestId: ID!) {\n    executeReplay(input: { requestId: $requestId }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.ExecuteReplayDocument,
    "\n  fragment RunSummaryFields on Run {\n    id\n    jobName\n    status\n    trigger\n    mode\n    requestedBy\n    instance\n    generation\n    cancelRequested\n    pauseRequested\n    stopReason\n    startedAt\n    finishedAt\n    message\n    progress {\n      total\n      processed\n      succeeded\n      failed\n      skipped\n      ambiguous\n      percent\n    }\n  }\n": typeof types.RunSummaryFieldsFragmentDoc,
    "\n  fragment RunLiveFields on Run {\n    ...RunSummaryFields\n    checkpoint\n    startCheckpoint\n    leaseUntil\n    heartbeatAt\n    activatedAt\n    cancelRequestedBy\n  }\n": typeof types.RunLiveFieldsFragmentDoc,
    "\n  query Run($id: ID!) {\n    run(id: $id) {\n      ...RunLiveFields\n      jobVersion\n      scheduledFor\n      job {\n        id\n        name\n        timezone\n        riskLevel\n        leaseSeconds\n      }\n      resumedFrom {\n        id\n        status\n        checkpoint\n      }\n      ledgerSummary {\n        state\n        count\n      }\n      events {\n        at\n        kind\n        detail\n      }\n    }\n  }\n": typeof types.RunDocument,
    "\n  query RunErrors($id: ID!, $first: Int, $after: String) {\n    run(id: $id) {\n      id\n      errors(first: $first, after: $after) {\n        nodes {\n          itemKey\n          failureClass\n          message\n          attempt\n          createdAt\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n": typeof types.RunErrorsDocument,
    "\n  query Runs($jobName: String, $status: [RunStatus!], $first: Int, $after: String) {\n    runs(jobName: $jobName, status: $status, first: $first, after: $after) {\n      nodes {\n        ...RunSummaryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.RunsDocument,
    "\n  subscription RunProgress($runId: ID!) {\n    runProgress(runId: $runId) {\n      ...RunLiveFields\n    }\n  }\n": typeof types.RunProgressDocument,
    "\n  subscription RunEvents($jobName: String) {\n    runEvents(jobName: $jobName) {\n      kind\n      run {\n        ...RunSummaryFields\n      }\n    }\n  }\n": typeof types.RunEventsDocument,
    "\n  mutation CancelRun($runId: ID!) {\n    cancelRun(input: { runId: $runId }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.CancelRunDocument,
    "\n  query Me {\n    me {\n      name\n      role\n    }\n  }\n": typeof types.MeDocument,
    "\n  query Maintenance {\n    maintenance\n  }\n": typeof types.MaintenanceDocument,
    "\n  mutation SetMaintenance($paused: Boolean!) {\n    setMaintenance(input: { paused: $paused }) {\n      maintenance\n      resumedRuns {\n        id\n        jobName\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": typeof types.SetMaintenanceDocument,
};
const documents: Documents = {
    "\n  fragment AlertFields on Alert {\n    id\n    kind\n    severity\n    jobName\n    target\n    message\n    value\n    since\n    run {\n      id\n    }\n  }\n": types.AlertFieldsFragmentDoc,
    "\n  query Alerts {\n    alerts {\n      ...AlertFields\n    }\n  }\n": types.AlertsDocument,
    "\n  subscription AlertRaised {\n    alertRaised {\n      ...AlertFields\n    }\n  }\n": types.AlertRaisedDocument,
    "\n  query AuditLog($first: Int, $after: String) {\n    auditLog(first: $first, after: $after) {\n      nodes {\n        id\n        actor\n        action\n        target\n        arguments\n        outcome\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.AuditLogDocument,
    "\n  query Jobs($first: Int, $after: String) {\n    maintenance\n    jobs(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        description\n        cron\n        timezone\n        enabled\n        paused\n        nextScheduledAt\n        riskLevel\n        currentGeneration\n        activeRun {\n          ...RunSummaryFields\n        }\n        lastRun {\n          ...RunSummaryFields\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.JobsDocument,
    "\n  query Job($name: String!) {\n    job(name: $name) {\n      id\n      name\n      description\n      cron\n      timezone\n      enabled\n      paused\n      nextScheduledAt\n      nextFireTimes(n: 5)\n      riskLevel\n      leaseSeconds\n      version\n      currentGeneration\n      updatedAt\n      updatedBy\n      activeRun {\n        ...RunSummaryFields\n      }\n      lastRun {\n        ...RunSummaryFields\n      }\n      ledgerSummary {\n        state\n        count\n      }\n    }\n  }\n": types.JobDocument,
    "\n  query JobRuns($name: String!, $status: [RunStatus!], $first: Int, $after: String) {\n    job(name: $name) {\n      id\n      runs(status: $status, first: $first, after: $after) {\n        nodes {\n          ...RunSummaryFields\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n": types.JobRunsDocument,
    "\n  query CronPreview($cron: String!, $timezone: String!) {\n    cronPreview(cron: $cron, timezone: $timezone, n: 5) {\n      valid\n      nextFireTimes\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.CronPreviewDocument,
    "\n  mutation StartJob($name: String!, $mode: RunMode!) {\n    startJob(input: { name: $name, mode: $mode }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.StartJobDocument,
    "\n  mutation UpdateJobSchedule($input: UpdateJobScheduleInput!) {\n    updateJobSchedule(input: $input) {\n      job {\n        id\n        name\n        cron\n        timezone\n        enabled\n        leaseSeconds\n        nextScheduledAt\n        nextFireTimes(n: 5)\n        updatedAt\n        updatedBy\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.UpdateJobScheduleDocument,
    "\n  mutation PauseJob($name: String!) {\n    pauseJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.PauseJobDocument,
    "\n  mutation ResumeJob($name: String!) {\n    resumeJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.ResumeJobDocument,
    "\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    jobName\n    generation\n    targetKey\n    step\n    state\n    attempt\n    idempotencyKey\n    inputChanged\n    external\n    effectRef\n    evidenceRef\n    lastError\n    sameErrorCount\n    updatedAt\n    run {\n      id\n    }\n  }\n": types.LedgerEntryFieldsFragmentDoc,
    "\n  query Ledger($jobName: String!, $state: [LedgerState!], $runId: ID, $targetPrefix: String, $first: Int, $after: String) {\n    ledger(jobName: $jobName, state: $state, runId: $runId, targetPrefix: $targetPrefix, first: $first, after: $after) {\n      nodes {\n        ...LedgerEntryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.LedgerDocument,
    "\n  mutation ResolveAmbiguous($input: ResolveAmbiguousInput!) {\n    resolveAmbiguous(input: $input) {\n      ledgerEntry {\n        ...LedgerEntryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.ResolveAmbiguousDocument,
    "\n  fragment ReconcileRequestFields on ReconcileRequest {\n    id\n    status\n    resultState\n    message\n    attempt\n    entry {\n      id\n      targetKey\n      state\n    }\n  }\n": types.ReconcileRequestFieldsFragmentDoc,
    "\n  mutation ReconcileEntry($entryId: ID!) {\n    reconcileEntry(input: { entryId: $entryId }) {\n      reconcileRequest {\n        ...ReconcileRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.ReconcileEntryDocument,
    "\n  subscription ReconcileRequest($id: ID!) {\n    reconcileRequest(id: $id) {\n      ...ReconcileRequestFields\n    }\n  }\n": types.ReconcileRequestDocument,
    "\n  fragment PreflightFields on ReplayPreflight {\n    jobName\n    kind\n    generation\n    scope\n    riskLevel\n    confirmed\n    failedByClass {\n      state\n      count\n    }\n    ambiguous\n    inFlight\n    targetsInScope\n    fixQueue\n    lastCheckpointAgeSeconds\n    downstreamErrorRate\n    downstreamCalls\n    jobVersionChanged\n    runJobVersion\n    currentJobVersion\n    requiresApproval\n    approvalReasons\n    blocked\n    blockingReasons\n    checks {\n      name\n      value\n      threshold\n      verdict\n      detail\n    }\n    computedAt\n  }\n": types.PreflightFieldsFragmentDoc,
    "\n  query ReplayPreflight($runId: ID!, $scope: ReplayScope!) {\n    run(id: $runId) {\n      id\n      jobName\n      status\n      generation\n      startedAt\n      finishedAt\n      job {\n        id\n        name\n        riskLevel\n      }\n    }\n    replayPreflight(runId: $runId, scope: $scope) {\n      ...PreflightFields\n    }\n  }\n": types.ReplayPreflightDocument,
    "\n  fragment ReplayRequestFields on ReplayRequest {\n    id\n    kind\n    generation\n    scope\n    status\n    reason\n    compensationRef\n    requestedBy\n    decidedBy\n    decisionNote\n    createdAt\n    decidedAt\n    executedAt\n    job {\n      id\n      name\n      riskLevel\n    }\n    sourceRun {\n      id\n      status\n    }\n    replayRun {\n      id\n      status\n    }\n    preflight {\n      ...PreflightFields\n    }\n  }\n": types.ReplayRequestFieldsFragmentDoc,
    "\n  query ReplayRequests($status: [ReplayStatus!], $first: Int, $after: String) {\n    replayRequests(status: $status, first: $first, after: $after) {\n      nodes {\n        ...ReplayRequestFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.ReplayRequestsDocument,
    "\n  mutation RequestReplay($input: RequestReplayInput!) {\n    requestReplay(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.RequestReplayDocument,
    "\n  mutation ApproveReplay($requestId: ID!, $note: String) {\n    approveReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.ApproveReplayDocument,
    "\n  mutation RejectReplay($requestId: ID!, $note: String) {\n    rejectReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.RejectReplayDocument,
    "\n  query RestartPreflight($name: String!) {\n    restartPreflight(name: $name) {\n      ...PreflightFields\n    }\n  }\n": types.RestartPreflightDocument,
    "\n  mutation RequestRestart($input: RequestRestartInput!) {\n    requestRestart(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.RequestRestartDocument,
    "\n  mutation ExecuteReplay($requestId: ID!) {\n    executeReplay(input: { requestId: $requestId }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.ExecuteReplayDocument,
    "\n  fragment RunSummaryFields on Run {\n    id\n    jobName\n    status\n    trigger\n    mode\n    requestedBy\n    instance\n    generation\n    cancelRequested\n    pauseRequested\n    stopReason\n    startedAt\n    finishedAt\n    message\n    progress {\n      total\n      processed\n      succeeded\n      failed\n      skipped\n      ambiguous\n      percent\n    }\n  }\n": types.RunSummaryFieldsFragmentDoc,
    "\n  fragment RunLiveFields on Run {\n    ...RunSummaryFields\n    checkpoint\n    startCheckpoint\n    leaseUntil\n    heartbeatAt\n    activatedAt\n    cancelRequestedBy\n  }\n": types.RunLiveFieldsFragmentDoc,
    "\n  query Run($id: ID!) {\n    run(id: $id) {\n      ...RunLiveFields\n      jobVersion\n      scheduledFor\n      job {\n        id\n        name\n        timezone\n        riskLevel\n        leaseSeconds\n      }\n      resumedFrom {\n        id\n        status\n        checkpoint\n      }\n      ledgerSummary {\n        state\n        count\n      }\n      events {\n        at\n        kind\n        detail\n      }\n    }\n  }\n": types.RunDocument,
    "\n  query RunErrors($id: ID!, $first: Int, $after: String) {\n    run(id: $id) {\n      id\n      errors(first: $first, after: $after) {\n        nodes {\n          itemKey\n          failureClass\n          message\n          attempt\n          createdAt\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n": types.RunErrorsDocument,
    "\n  query Runs($jobName: String, $status: [RunStatus!], $first: Int, $after: String) {\n    runs(jobName: $jobName, status: $status, first: $first, after: $after) {\n      nodes {\n        ...RunSummaryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.RunsDocument,
    "\n  subscription RunProgress($runId: ID!) {\n    runProgress(runId: $runId) {\n      ...RunLiveFields\n    }\n  }\n": types.RunProgressDocument,
    "\n  subscription RunEvents($jobName: String) {\n    runEvents(jobName: $jobName) {\n      kind\n      run {\n        ...RunSummaryFields\n      }\n    }\n  }\n": types.RunEventsDocument,
    "\n  mutation CancelRun($runId: ID!) {\n    cancelRun(input: { runId: $runId }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.CancelRunDocument,
    "\n  query Me {\n    me {\n      name\n      role\n    }\n  }\n": types.MeDocument,
    "\n  query Maintenance {\n    maintenance\n  }\n": types.MaintenanceDocument,
    "\n  mutation SetMaintenance($paused: Boolean!) {\n    setMaintenance(input: { paused: $paused }) {\n      maintenance\n      resumedRuns {\n        id\n        jobName\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n": types.SetMaintenanceDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment AlertFields on Alert {\n    id\n    kind\n    severity\n    jobName\n    target\n    message\n    value\n    since\n    run {\n      id\n    }\n  }\n"): (typeof documents)["\n  fragment AlertFields on Alert {\n    id\n    kind\n    severity\n    jobName\n    target\n    message\n    value\n    since\n    run {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Alerts {\n    alerts {\n      ...AlertFields\n    }\n  }\n"): (typeof documents)["\n  query Alerts {\n    alerts {\n      ...AlertFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription AlertRaised {\n    alertRaised {\n      ...AlertFields\n    }\n  }\n"): (typeof documents)["\n  subscription AlertRaised {\n    alertRaised {\n      ...AlertFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AuditLog($first: Int, $after: String) {\n    auditLog(first: $first, after: $after) {\n      nodes {\n        id\n        actor\n        action\n        target\n        arguments\n        outcome\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query AuditLog($first: Int, $after: String) {\n    auditLog(first: $first, after: $after) {\n      nodes {\n        id\n        actor\n        action\n        target\n        arguments\n        outcome\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Jobs($first: Int, $after: String) {\n    maintenance\n    jobs(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        description\n        cron\n        timezone\n        enabled\n        paused\n        nextScheduledAt\n        riskLevel\n        currentGeneration\n        activeRun {\n          ...RunSummaryFields\n        }\n        lastRun {\n          ...RunSummaryFields\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query Jobs($first: Int, $after: String) {\n    maintenance\n    jobs(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        description\n        cron\n        timezone\n        enabled\n        paused\n        nextScheduledAt\n        riskLevel\n        currentGeneration\n        activeRun {\n          ...RunSummaryFields\n        }\n        lastRun {\n          ...RunSummaryFields\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Job($name: String!) {\n    job(name: $name) {\n      id\n      name\n      description\n      cron\n      timezone\n      enabled\n      paused\n      nextScheduledAt\n      nextFireTimes(n: 5)\n      riskLevel\n      leaseSeconds\n      version\n      currentGeneration\n      updatedAt\n      updatedBy\n      activeRun {\n        ...RunSummaryFields\n      }\n      lastRun {\n        ...RunSummaryFields\n      }\n      ledgerSummary {\n        state\n        count\n      }\n    }\n  }\n"): (typeof documents)["\n  query Job($name: String!) {\n    job(name: $name) {\n      id\n      name\n      description\n      cron\n      timezone\n      enabled\n      paused\n      nextScheduledAt\n      nextFireTimes(n: 5)\n      riskLevel\n      leaseSeconds\n      version\n      currentGeneration\n      updatedAt\n      updatedBy\n      activeRun {\n        ...RunSummaryFields\n      }\n      lastRun {\n        ...RunSummaryFields\n      }\n      ledgerSummary {\n        state\n        count\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query JobRuns($name: String!, $status: [RunStatus!], $first: Int, $after: String) {\n    job(name: $name) {\n      id\n      runs(status: $status, first: $first, after: $after) {\n        nodes {\n          ...RunSummaryFields\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query JobRuns($name: String!, $status: [RunStatus!], $first: Int, $after: String) {\n    job(name: $name) {\n      id\n      runs(status: $status, first: $first, after: $after) {\n        nodes {\n          ...RunSummaryFields\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query CronPreview($cron: String!, $timezone: String!) {\n    cronPreview(cron: $cron, timezone: $timezone, n: 5) {\n      valid\n      nextFireTimes\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  query CronPreview($cron: String!, $timezone: String!) {\n    cronPreview(cron: $cron, timezone: $timezone, n: 5) {\n      valid\n      nextFireTimes\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation StartJob($name: String!, $mode: RunMode!) {\n    startJob(input: { name: $name, mode: $mode }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation StartJob($name: String!, $mode: RunMode!) {\n    startJob(input: { name: $name, mode: $mode }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateJobSchedule($input: UpdateJobScheduleInput!) {\n    updateJobSchedule(input: $input) {\n      job {\n        id\n        name\n        cron\n        timezone\n        enabled\n        leaseSeconds\n        nextScheduledAt\n        nextFireTimes(n: 5)\n        updatedAt\n        updatedBy\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateJobSchedule($input: UpdateJobScheduleInput!) {\n    updateJobSchedule(input: $input) {\n      job {\n        id\n        name\n        cron\n        timezone\n        enabled\n        leaseSeconds\n        nextScheduledAt\n        nextFireTimes(n: 5)\n        updatedAt\n        updatedBy\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation PauseJob($name: String!) {\n    pauseJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation PauseJob($name: String!) {\n    pauseJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ResumeJob($name: String!) {\n    resumeJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation ResumeJob($name: String!) {\n    resumeJob(input: { name: $name }) {\n      job {\n        id\n        name\n        paused\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    jobName\n    generation\n    targetKey\n    step\n    state\n    attempt\n    idempotencyKey\n    inputChanged\n    external\n    effectRef\n    evidenceRef\n    lastError\n    sameErrorCount\n    updatedAt\n    run {\n      id\n    }\n  }\n"): (typeof documents)["\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    jobName\n    generation\n    targetKey\n    step\n    state\n    attempt\n    idempotencyKey\n    inputChanged\n    external\n    effectRef\n    evidenceRef\n    lastError\n    sameErrorCount\n    updatedAt\n    run {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Ledger($jobName: String!, $state: [LedgerState!], $runId: ID, $targetPrefix: String, $first: Int, $after: String) {\n    ledger(jobName: $jobName, state: $state, runId: $runId, targetPrefix: $targetPrefix, first: $first, after: $after) {\n      nodes {\n        ...LedgerEntryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query Ledger($jobName: String!, $state: [LedgerState!], $runId: ID, $targetPrefix: String, $first: Int, $after: String) {\n    ledger(jobName: $jobName, state: $state, runId: $runId, targetPrefix: $targetPrefix, first: $first, after: $after) {\n      nodes {\n        ...LedgerEntryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ResolveAmbiguous($input: ResolveAmbiguousInput!) {\n    resolveAmbiguous(input: $input) {\n      ledgerEntry {\n        ...LedgerEntryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation ResolveAmbiguous($input: ResolveAmbiguousInput!) {\n    resolveAmbiguous(input: $input) {\n      ledgerEntry {\n        ...LedgerEntryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ReconcileRequestFields on ReconcileRequest {\n    id\n    status\n    resultState\n    message\n    attempt\n    entry {\n      id\n      targetKey\n      state\n    }\n  }\n"): (typeof documents)["\n  fragment ReconcileRequestFields on ReconcileRequest {\n    id\n    status\n    resultState\n    message\n    attempt\n    entry {\n      id\n      targetKey\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ReconcileEntry($entryId: ID!) {\n    reconcileEntry(input: { entryId: $entryId }) {\n      reconcileRequest {\n        ...ReconcileRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation ReconcileEntry($entryId: ID!) {\n    reconcileEntry(input: { entryId: $entryId }) {\n      reconcileRequest {\n        ...ReconcileRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription ReconcileRequest($id: ID!) {\n    reconcileRequest(id: $id) {\n      ...ReconcileRequestFields\n    }\n  }\n"): (typeof documents)["\n  subscription ReconcileRequest($id: ID!) {\n    reconcileRequest(id: $id) {\n      ...ReconcileRequestFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PreflightFields on ReplayPreflight {\n    jobName\n    kind\n    generation\n    scope\n    riskLevel\n    confirmed\n    failedByClass {\n      state\n      count\n    }\n    ambiguous\n    inFlight\n    targetsInScope\n    fixQueue\n    lastCheckpointAgeSeconds\n    downstreamErrorRate\n    downstreamCalls\n    jobVersionChanged\n    runJobVersion\n    currentJobVersion\n    requiresApproval\n    approvalReasons\n    blocked\n    blockingReasons\n    checks {\n      name\n      value\n      threshold\n      verdict\n      detail\n    }\n    computedAt\n  }\n"): (typeof documents)["\n  fragment PreflightFields on ReplayPreflight {\n    jobName\n    kind\n    generation\n    scope\n    riskLevel\n    confirmed\n    failedByClass {\n      state\n      count\n    }\n    ambiguous\n    inFlight\n    targetsInScope\n    fixQueue\n    lastCheckpointAgeSeconds\n    downstreamErrorRate\n    downstreamCalls\n    jobVersionChanged\n    runJobVersion\n    currentJobVersion\n    requiresApproval\n    approvalReasons\n    blocked\n    blockingReasons\n    checks {\n      name\n      value\n      threshold\n      verdict\n      detail\n    }\n    computedAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ReplayPreflight($runId: ID!, $scope: ReplayScope!) {\n    run(id: $runId) {\n      id\n      jobName\n      status\n      generation\n      startedAt\n      finishedAt\n      job {\n        id\n        name\n        riskLevel\n      }\n    }\n    replayPreflight(runId: $runId, scope: $scope) {\n      ...PreflightFields\n    }\n  }\n"): (typeof documents)["\n  query ReplayPreflight($runId: ID!, $scope: ReplayScope!) {\n    run(id: $runId) {\n      id\n      jobName\n      status\n      generation\n      startedAt\n      finishedAt\n      job {\n        id\n        name\n        riskLevel\n      }\n    }\n    replayPreflight(runId: $runId, scope: $scope) {\n      ...PreflightFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ReplayRequestFields on ReplayRequest {\n    id\n    kind\n    generation\n    scope\n    status\n    reason\n    compensationRef\n    requestedBy\n    decidedBy\n    decisionNote\n    createdAt\n    decidedAt\n    executedAt\n    job {\n      id\n      name\n      riskLevel\n    }\n    sourceRun {\n      id\n      status\n    }\n    replayRun {\n      id\n      status\n    }\n    preflight {\n      ...PreflightFields\n    }\n  }\n"): (typeof documents)["\n  fragment ReplayRequestFields on ReplayRequest {\n    id\n    kind\n    generation\n    scope\n    status\n    reason\n    compensationRef\n    requestedBy\n    decidedBy\n    decisionNote\n    createdAt\n    decidedAt\n    executedAt\n    job {\n      id\n      name\n      riskLevel\n    }\n    sourceRun {\n      id\n      status\n    }\n    replayRun {\n      id\n      status\n    }\n    preflight {\n      ...PreflightFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ReplayRequests($status: [ReplayStatus!], $first: Int, $after: String) {\n    replayRequests(status: $status, first: $first, after: $after) {\n      nodes {\n        ...ReplayRequestFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query ReplayRequests($status: [ReplayStatus!], $first: Int, $after: String) {\n    replayRequests(status: $status, first: $first, after: $after) {\n      nodes {\n        ...ReplayRequestFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RequestReplay($input: RequestReplayInput!) {\n    requestReplay(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation RequestReplay($input: RequestReplayInput!) {\n    requestReplay(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ApproveReplay($requestId: ID!, $note: String) {\n    approveReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation ApproveReplay($requestId: ID!, $note: String) {\n    approveReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RejectReplay($requestId: ID!, $note: String) {\n    rejectReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation RejectReplay($requestId: ID!, $note: String) {\n    rejectReplay(input: { requestId: $requestId, note: $note }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query RestartPreflight($name: String!) {\n    restartPreflight(name: $name) {\n      ...PreflightFields\n    }\n  }\n"): (typeof documents)["\n  query RestartPreflight($name: String!) {\n    restartPreflight(name: $name) {\n      ...PreflightFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RequestRestart($input: RequestRestartInput!) {\n    requestRestart(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation RequestRestart($input: RequestRestartInput!) {\n    requestRestart(input: $input) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ExecuteReplay($requestId: ID!) {\n    executeReplay(input: { requestId: $requestId }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation ExecuteReplay($requestId: ID!) {\n    executeReplay(input: { requestId: $requestId }) {\n      replayRequest {\n        ...ReplayRequestFields\n      }\n      run {\n        id\n        status\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment RunSummaryFields on Run {\n    id\n    jobName\n    status\n    trigger\n    mode\n    requestedBy\n    instance\n    generation\n    cancelRequested\n    pauseRequested\n    stopReason\n    startedAt\n    finishedAt\n    message\n    progress {\n      total\n      processed\n      succeeded\n      failed\n      skipped\n      ambiguous\n      percent\n    }\n  }\n"): (typeof documents)["\n  fragment RunSummaryFields on Run {\n    id\n    jobName\n    status\n    trigger\n    mode\n    requestedBy\n    instance\n    generation\n    cancelRequested\n    pauseRequested\n    stopReason\n    startedAt\n    finishedAt\n    message\n    progress {\n      total\n      processed\n      succeeded\n      failed\n      skipped\n      ambiguous\n      percent\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment RunLiveFields on Run {\n    ...RunSummaryFields\n    checkpoint\n    startCheckpoint\n    leaseUntil\n    heartbeatAt\n    activatedAt\n    cancelRequestedBy\n  }\n"): (typeof documents)["\n  fragment RunLiveFields on Run {\n    ...RunSummaryFields\n    checkpoint\n    startCheckpoint\n    leaseUntil\n    heartbeatAt\n    activatedAt\n    cancelRequestedBy\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Run($id: ID!) {\n    run(id: $id) {\n      ...RunLiveFields\n      jobVersion\n      scheduledFor\n      job {\n        id\n        name\n        timezone\n        riskLevel\n        leaseSeconds\n      }\n      resumedFrom {\n        id\n        status\n        checkpoint\n      }\n      ledgerSummary {\n        state\n        count\n      }\n      events {\n        at\n        kind\n        detail\n      }\n    }\n  }\n"): (typeof documents)["\n  query Run($id: ID!) {\n    run(id: $id) {\n      ...RunLiveFields\n      jobVersion\n      scheduledFor\n      job {\n        id\n        name\n        timezone\n        riskLevel\n        leaseSeconds\n      }\n      resumedFrom {\n        id\n        status\n        checkpoint\n      }\n      ledgerSummary {\n        state\n        count\n      }\n      events {\n        at\n        kind\n        detail\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query RunErrors($id: ID!, $first: Int, $after: String) {\n    run(id: $id) {\n      id\n      errors(first: $first, after: $after) {\n        nodes {\n          itemKey\n          failureClass\n          message\n          attempt\n          createdAt\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query RunErrors($id: ID!, $first: Int, $after: String) {\n    run(id: $id) {\n      id\n      errors(first: $first, after: $after) {\n        nodes {\n          itemKey\n          failureClass\n          message\n          attempt\n          createdAt\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Runs($jobName: String, $status: [RunStatus!], $first: Int, $after: String) {\n    runs(jobName: $jobName, status: $status, first: $first, after: $after) {\n      nodes {\n        ...RunSummaryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query Runs($jobName: String, $status: [RunStatus!], $first: Int, $after: String) {\n    runs(jobName: $jobName, status: $status, first: $first, after: $after) {\n      nodes {\n        ...RunSummaryFields\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription RunProgress($runId: ID!) {\n    runProgress(runId: $runId) {\n      ...RunLiveFields\n    }\n  }\n"): (typeof documents)["\n  subscription RunProgress($runId: ID!) {\n    runProgress(runId: $runId) {\n      ...RunLiveFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription RunEvents($jobName: String) {\n    runEvents(jobName: $jobName) {\n      kind\n      run {\n        ...RunSummaryFields\n      }\n    }\n  }\n"): (typeof documents)["\n  subscription RunEvents($jobName: String) {\n    runEvents(jobName: $jobName) {\n      kind\n      run {\n        ...RunSummaryFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CancelRun($runId: ID!) {\n    cancelRun(input: { runId: $runId }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CancelRun($runId: ID!) {\n    cancelRun(input: { runId: $runId }) {\n      run {\n        ...RunSummaryFields\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Me {\n    me {\n      name\n      role\n    }\n  }\n"): (typeof documents)["\n  query Me {\n    me {\n      name\n      role\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Maintenance {\n    maintenance\n  }\n"): (typeof documents)["\n  query Maintenance {\n    maintenance\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetMaintenance($paused: Boolean!) {\n    setMaintenance(input: { paused: $paused }) {\n      maintenance\n      resumedRuns {\n        id\n        jobName\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation SetMaintenance($paused: Boolean!) {\n    setMaintenance(input: { paused: $paused }) {\n      maintenance\n      resumedRuns {\n        id\n        jobName\n      }\n      userErrors {\n        code\n        message\n        field\n      }\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;