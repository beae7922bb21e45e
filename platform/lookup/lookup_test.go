package lookup_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/consent"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/lookup"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

func ph(i int) string { return fmt.Sprintf("+1415555%04d", i) }

// One reachability rule for every account state, with and without a sender.
func TestCheckAndLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	net := networktest.Builtin(t, builtin.Config{DB: d})
	add := func(p string, verified, phoneVerified, receiving bool) {
		t.Helper()
		if _, err := net.AddAccount(ctx, builtin.AccountSpec{Phone: p, Verified: verified,
			PhoneVerified: phoneVerified, ReceivingEnabled: receiving}); err != nil {
			t.Fatal(err)
		}
	}
	add(ph(1), true, true, true) // the sender
	add(ph(2), true, true, true)
	add(ph(3), false, true, true)
	add(ph(4), true, false, true)
	add(ph(5), true, true, false)
	add(ph(6), true, true, true)
	if err := net.Block(ctx, ph(6), ph(1)); err != nil {
		t.Fatal(err)
	}

	// A tenant with the sender number, through the real senders service.
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	var orgID int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('o') RETURNING id`).Scan(&orgID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, orgID, db.SchemaFor(orgID)); err != nil {
		t.Fatal(err)
	}
	tn, _ := db.NewTenant(orgID, db.SchemaFor(orgID))
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mig.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	snd, err := senders.New(senders.Config{DB: d, Jobs: rc, Network: net, Logger: quiet, Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := snd.Register(ctx, tn, senders.RegisterInput{Phone: ph(1)})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := consent.New(consent.Config{DB: d, Jobs: rc, Network: net, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lookup.New(lookup.Config{Network: net, Senders: snd, Contacts: cs})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		phone, sender string
		exists        bool
		reason        string
	}{
		{ph(2), "", true, lookup.ReasonOK},
		{ph(3), "", true, lookup.ReasonOK}, // the owner's verification does not stop receiving
		{ph(4), ph(1), true, lookup.ReasonPhoneUnverified},
		{ph(5), ph(1), true, lookup.ReasonReceivingDisabled},
		{ph(6), ph(1), true, lookup.ReasonBlockedSender},
		{ph(6), "", true, lookup.ReasonOK},
		{ph(1), ph(1), true, lookup.ReasonSelf},
		{ph(7), ph(1), false, lookup.ReasonNotRegistered},
	}
	for _, tt := range tests {
		r, err := lookup.Check(ctx, net, tt.phone, tt.sender)
		if err != nil {
			t.Fatal(err)
		}
		if r.Exists != tt.exists || r.ReasonCode != tt.reason || r.CanReceive != (tt.reason == lookup.ReasonOK) ||
			(r.RecipientID != nil) != tt.exists {
			t.Errorf("Check(%s, %q) = %+v, want %s", tt.phone, tt.sender, r, tt.reason)
		}
		q := lookup.Query{Phone: tt.phone}
		if tt.sender != "" {
			q.SenderNumberID = fmt.Sprint(sn.ID)
		}
		viaService, err := svc.Lookup(ctx, tn, q)
		if err != nil || viaService.ReasonCode != r.ReasonCode {
			t.Errorf("Lookup(%+v) = %+v %v, want the rule's %s", q, viaService, err, r.ReasonCode)
		}
	}

	// The organization's opt-out list: opted_out, after not_registered.
	for _, p := range []string{ph(2), ph(7)} {
		if _, _, err := cs.Add(ctx, tn, consent.Actor{}, consent.AddRequest{Phone: p, Source: consent.SourceAPI}); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range map[string]string{ph(2): lookup.ReasonOptedOut, ph(7): lookup.ReasonNotRegistered, ph(3): lookup.ReasonOK} {
		r, err := svc.Lookup(ctx, tn, lookup.Query{Phone: p, SenderNumberID: fmt.Sprint(sn.ID)})
		if err != nil || r.ReasonCode != want || r.CanReceive != (want == lookup.ReasonOK) {
			t.Errorf("Lookup(%s) after opt-outs = %+v %v, want %s", p, r, err, want)
		}
	}

	for _, tt := range []struct {
		q    lookup.Query
		kind apperr.Kind
	}{
		{lookup.Query{}, apperr.KindInvalid},
		{lookup.Query{Phone: "0"}, apperr.KindInvalid},
		{lookup.Query{Phone: ph(2), SenderNumberID: "-3"}, apperr.KindInvalid},
		{lookup.Query{Phone: ph(2), SenderNumberID: "999"}, apperr.KindNotFound},
		{lookup.Query{Phone: ph(2), SenderPhone: ph(9)}, apperr.KindNotFound},
	} {
		_, err := svc.Lookup(ctx, tn, tt.q)
		if e, ok := apperr.As(err); !ok || e.Kind != tt.kind {
			t.Errorf("Lookup(%+v) = %v, want kind %s", tt.q, err, tt.kind)
		}
	}
}

// failingNetwork fails every lookup with err.
type failingNetwork struct {
	network.Network
	err error
}

func (f failingNetwork) Lookup(context.Context, string, string) (network.Account, error) {
	return network.Account{}, f.err
}

// A network that fails is 503 network_unavailable; a failure of the
// platform's own met on the way (the built-in network's database) is
// returned as it is, for the HTTP layer to answer as any other (503
// service_unavailable when the database is unavailable).
func TestCheckFailures(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name     string
		err      error
		wantCode string // "" : not an apperr.Error
	}{
		{"the network", fmt.Errorf("network: %w", refused), lookup.CodeNetworkUnavailable},
		{"the platform's database", network.Platform(fmt.Errorf("lookup: %w", refused)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := lookup.Check(context.Background(), failingNetwork{err: tt.err}, ph(1), "")
			if !errors.Is(err, refused) {
				t.Fatalf("Check = %v, want the cause kept", err)
			}
			e, ok := apperr.As(err)
			switch {
			case tt.wantCode == "" && ok:
				t.Fatalf("Check = %v (%s), want the platform's failure unwrapped", err, e.Code)
			case tt.wantCode == "":
				if !db.IsUnavailable(err) {
					t.Fatalf("Check = %v: not a database unavailable (503 service_unavailable)", err)
				}
			case !ok || e.Kind != apperr.KindUnavailable || e.Code != tt.wantCode:
				t.Fatalf("Check = %v, want 503 %s", err, tt.wantCode)
			}
		})
	}
}
