// Package report is the JSON documents gpulaunch writes and reads, with
// their text forms:
//
//   - a run's report (`--report FILE`): its schema is Run, documented in
//     docs/report.md and fixed by docs/report.schema.json (a test in
//     cmd/gpulaunch validates every shape of run against it); Build makes
//     one from a run's values, Marshal writes it, Read reads it back for
//     `gpulaunch report FILE`, refusing the other JSON gpulaunch writes
//     by name, and Picture turns it into what pkg/chart draws; Path and
//     FileFor name the file a node writes it to, checked before the run;
//   - the plan (`plan --json`, docs/plan.schema.json) and its table
//     (PlanJSON, WritePlan), also the report's "plan";
//   - a node's description (`info --json`, docs/info.schema.json) and
//     its text (InfoJSON, WriteInfo).
//
// It decides nothing about a run and touches no file but the one Read
// is given (and the directory FileFor checks) and the report WriteFile
// writes whole (outputs.WriteWhole); the CLI writes the other documents
// where the user said.
package report
