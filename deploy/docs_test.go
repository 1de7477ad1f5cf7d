package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// deployReadme is this directory's README, which lists the alerts.
const deployReadme = "README.md"

// TestAlertDocsListEveryAlert: the runbook's alert table has one row for each alert of the
// rules file, with its severity and its `for` ("at once" when it has none), and no row for an
// alert the rules do not have; deploy/README.md names every alert and no other.
func TestAlertDocsListEveryAlert(t *testing.T) {
	t.Parallel()
	alerts := map[string]rule{}
	for _, r := range loadRules(t, alertRulesFile) {
		if r.Alert != "" {
			alerts[r.Alert] = r
		}
	}
	if len(alerts) == 0 {
		t.Fatal("the alerting rules hold no alert")
	}

	runbook, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	rows := alertTableRows(string(runbook))
	if len(rows) == 0 {
		t.Fatalf("%s: no alert table (| alert | severity | fires after | when |)", runbookFile)
	}
	for name, r := range alerts {
		row, ok := rows[name]
		if !ok {
			t.Errorf("%s: the alert table has no row for %s", runbookFile, name)
			continue
		}
		wantFor := r.For
		if wantFor == "" {
			wantFor = "at once"
		}
		if row[0] != r.Labels["severity"] || row[1] != wantFor {
			t.Errorf("%s: %s's row says severity %q, fires after %q; the rule has %q, %q",
				runbookFile, name, row[0], row[1], r.Labels["severity"], wantFor)
		}
	}
	for name := range rows {
		if _, ok := alerts[name]; !ok {
			t.Errorf("%s: the alert table has a row for %s, which no rule defines", runbookFile, name)
		}
	}

	readme, err := os.ReadFile(deployReadme)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`(Baton[A-Z][A-Za-z]*)`").FindAllStringSubmatch(string(readme), -1) {
		named[m[1]] = true
	}
	for name := range alerts {
		if !named[name] {
			t.Errorf("%s does not name the alert %s", deployReadme, name)
		}
	}
	for name := range named {
		if _, ok := alerts[name]; !ok {
			t.Errorf("%s names the alert %s, which no rule defines", deployReadme, name)
		}
	}
}

// alertTableRows reads the runbook's alert table: each alert's severity and "fires after".
func alertTableRows(doc string) map[string][2]string {
	rows := map[string][2]string{}
	in := false
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case len(cells) >= 4 && cells[0] == "alert" && cells[1] == "severity" && cells[2] == "fires after":
			in = true
		case !in:
		case !strings.HasPrefix(strings.TrimSpace(line), "|"):
			in = false
		case strings.HasPrefix(cells[0], "---"):
		case len(cells) >= 4:
			rows[strings.Trim(cells[0], "`")] = [2]string{cells[1], cells[2]}
		}
	}
	return rows
}
