package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The drain over several worker processes (-drain-workers): platform api
// accepts -backlog messages with no worker running, then worker processes
// deliver them, three times. Spread: one message to each of -backlog
// recipients, delivered by one worker and then by -drain-workers workers,
// for their rate beside the one worker's (the goal). Conversations: the
// backlog over -recipients, as the 1-worker drain's (200 recipients: 200
// conversations of 50 at the default backlog), delivered by the
// -drain-workers workers, beside the 1-worker drain's rate (printed; one
// worker's jobs carry each conversation in batches that several processes
// split, docs/performance.md). Then platform api accepts -conversation
// messages from one sender to one recipient, at the sender's throttle
// (-conversation-rate and -conversation-burst, the organization's
// sender_rate and sender_burst), and the same number of workers deliver
// that backlog: the time it took against the throttle's own minimum, and
// whether the network took the messages in acceptance order.

// Tags of the phases' messages (their client_reference).
const (
	oneSpreadTag         = "bench-drain-one-spread"
	workersDrainTag      = "bench-drain-workers"
	workersConvTag       = "bench-drain-workers-conversations"
	conversationDrainTag = "bench-conversation"
)

// workersDrain is the delivery drain over several worker processes.
type workersDrain struct {
	// Workers is how many worker processes ran, DBMaxConns each one's
	// DB_MAX_CONNS.
	Workers    int `json:"workers"`
	DBMaxConns int `json:"db_max_conns"`
	// One is one worker's drain of the spread backlog (one message per
	// recipient), Spread the workers' drain of the same shape.
	One    drainRun `json:"one_worker_spread"`
	Spread drainRun `json:"spread"`
	// Ratio is Spread's rate over One's: the goal, at least 0.9.
	Ratio float64 `json:"ratio_to_one_worker"`
	// Conversations is the workers' drain of the backlog over -recipients,
	// ConversationsRatio its rate over the 1-worker drain's (same shape).
	Conversations      drainRun `json:"conversations"`
	ConversationsRatio float64  `json:"conversations_ratio_to_one_worker"`
	// Conversation is the deep conversation, nil when -conversation is 0.
	Conversation *conversationDrain `json:"conversation,omitempty"`
}

// drainRun is one backlog accepted by platform api, then delivered by
// worker processes.
type drainRun struct {
	// Workers ran the drain; Recipients is how many distinct recipients
	// the backlog went to (round-robin).
	Workers    int `json:"workers"`
	Recipients int `json:"recipients"`
	// Accept is platform api accepting the backlog (no workers).
	Accept loadResult `json:"accept"`
	// Drain is from the first sent_at to the last, Check its exactly-once
	// check, Delivering how many of the workers ran a delivery job of it.
	Drain      drainResult    `json:"drain"`
	Check      deliveryResult `json:"check"`
	Delivering int            `json:"workers_delivering"`
	// CPU is the CPU time of the worker processes and the database's
	// backends per message, in milliseconds; CPUWorkers the processes' part.
	CPU        float64 `json:"cpu_ms_per_message"`
	CPUWorkers float64 `json:"workers_cpu_ms_per_message"`
}

// conversationDrain is a backlog of messages from one sender to one
// recipient drained by the worker processes at the sender's throttle.
type conversationDrain struct {
	// Messages is how many were accepted; Rate and Burst are the sender's
	// throttle (the organization's sender_rate and sender_burst).
	Messages int64   `json:"messages"`
	Rate     float64 `json:"throttle_rate"`
	Burst    int     `json:"throttle_burst"`
	// Drain is from the first sent_at to the last; Minimum is the
	// throttle's own time for it, (Messages - Burst) / Rate: the burst
	// goes at once, the rest at the rate.
	Drain   drainResult    `json:"drain"`
	Minimum time.Duration  `json:"throttle_minimum_ns"`
	Check   deliveryResult `json:"check"`
	// Delivering is how many of the workers ran a delivery job of it.
	Delivering int `json:"workers_delivering"`
	// InOrder is whether the network's messages (by network id) are the
	// conversation's in acceptance (message id) order, each once;
	// Inversions counts the network messages whose message id is below
	// the one before, FirstInversion describes the first.
	InOrder        bool   `json:"in_acceptance_order"`
	NetworkRows    int64  `json:"network_rows"`
	Inversions     int    `json:"inversions"`
	FirstInversion string `json:"first_inversion,omitempty"`
}

// drainWorkers runs the drains over worker processes and the deep
// conversation, into rep.DrainWorkers; nothing when -drain-workers is 0.
// Every process it starts is stopped before it returns.
func (b *sendBench) drainWorkers(ctx context.Context, rep *sendReport) (err error) {
	if b.cfg.DrainWorkers == 0 {
		return nil
	}
	res := &workersDrain{Workers: b.cfg.DrainWorkers, DBMaxConns: b.cfg.DrainWorkerConns}
	rep.DrainWorkers = res
	// The conversation's organization is made before platform api starts,
	// so that the api meets it as it meets every other.
	var conv benchTenant
	if b.cfg.Conversation > 0 {
		if conv, err = b.conversationTenant(ctx); err != nil {
			return fmt.Errorf("deep conversation: %w", err)
		}
	}
	api, err := startChild(ctx, []string{"api"}, b.serviceEnv(), true)
	if err != nil {
		return fmt.Errorf("drain over %d workers: %w", b.cfg.DrainWorkers, err)
	}
	defer func() {
		api.keep = err != nil
		err = errors.Join(err, api.stop())
	}()
	g := newLoadGen(b.cfg.Concurrency, http.StatusAccepted)
	defer g.close()
	for _, r := range []struct {
		run        *drainRun
		workers    int
		recipients int
		tag        string
	}{
		{&res.One, 1, b.spreadRecipients(), oneSpreadTag},
		{&res.Spread, b.cfg.DrainWorkers, b.spreadRecipients(), workersDrainTag},
		{&res.Conversations, b.cfg.DrainWorkers, b.cfg.Recipients, workersConvTag},
	} {
		if *r.run, err = b.drainBy(ctx, g, api.addr, r.workers, r.recipients, r.tag); err != nil {
			return fmt.Errorf("drain over %d workers, %d recipients: %w", r.workers, r.recipients, err)
		}
	}
	res.Ratio = ratio(res.Spread.Drain.Rate, res.One.Drain.Rate)
	res.ConversationsRatio = ratio(res.Conversations.Drain.Rate, rep.Drain.Rate)
	if b.cfg.Conversation == 0 {
		return nil
	}
	if res.Conversation, err = b.conversation(ctx, g, api.addr, conv); err != nil {
		return fmt.Errorf("deep conversation: %w", err)
	}
	return nil
}

// spreadRecipients is how many recipients the spread drains go to: one
// message each (the fixtures make that many network accounts).
func (b *sendBench) spreadRecipients() int { return b.cfg.Backlog }

// drainBy has platform api (at addr) accept -backlog messages of the first
// tenants over recipients, tagged tag, then n worker processes deliver
// them; it waits for the jobs they left (finishJobs) and checks exactly
// once.
func (b *sendBench) drainBy(ctx context.Context, g *loadGen, addr string, n, recipients int, tag string) (drainRun, error) {
	first := b.tenants[:b.cfg.Tenants[0]]
	r := drainRun{Workers: n, Recipients: recipients}
	g.progress = b.prog.phase(fmt.Sprintf("drain, %d workers: accepting %d messages to %d recipients (no workers)", n, b.cfg.Backlog, recipients))
	total := int64(b.cfg.Backlog)
	var err error
	if r.Accept, err = g.closed(ctx, b.cfg.Concurrency, 10*time.Minute, b.sendRequestsTo(addr, first, tag, recipients),
		func(ok int64) bool { return ok >= total }); err != nil {
		return r, fmt.Errorf("accept: %w", err)
	}
	started := time.Now()
	err = b.withWorkers(ctx, n, func(pids []int) error {
		p := b.prog.phase(fmt.Sprintf("drain: %d platform workers delivering %d messages", n, r.Accept.OK))
		cpu := scopeCPU(b.cfg.Database, pids...)
		var err error
		r.Drain, err = waitDrain(ctx, b.countTagged(first, tag, "status IN ('sent', 'delivered')", "sent_at"),
			r.Accept.OK, b.cfg.DeliveryTimeout, p)
		after := scopeCPU(b.cfg.Database, pids...)
		r.CPU = cpuPerMessage(after.since(cpu), r.Accept.OK)
		r.CPUWorkers = cpuPerMessage(after.of(pids...).since(cpu), r.Accept.OK)
		if err != nil {
			return err
		}
		return b.finishJobs(ctx)
	})
	if err != nil {
		return r, err
	}
	if r.Check, err = b.delivered(ctx, first, tag, r.Accept.OK); err != nil {
		return r, err
	}
	r.Delivering, err = b.workersDelivering(ctx, started)
	return r, err
}

// withWorkers starts n platform worker processes (the service's
// environment with DB_MAX_CONNS -drain-worker-conns), runs f, and stops
// them all, at once, whatever happened. f gets their process ids.
func (b *sendBench) withWorkers(ctx context.Context, n int, f func(pids []int) error) (err error) {
	env := append(b.serviceEnv(), "DB_MAX_CONNS="+strconv.Itoa(b.cfg.DrainWorkerConns))
	workers := make([]*child, 0, n)
	defer func() {
		errs := make([]error, len(workers))
		var wg sync.WaitGroup
		for i, w := range workers {
			w.keep = err != nil // the workers' logs may say why
			wg.Go(func() { errs[i] = w.stop() })
		}
		wg.Wait()
		err = errors.Join(append([]error{err}, errs...)...)
	}()
	for i := range n {
		w, err := startChild(ctx, []string{"worker"}, env, false)
		if err != nil {
			return fmt.Errorf("start worker %d: %w", i+1, err)
		}
		workers = append(workers, w)
	}
	pids := make([]int, len(workers))
	for i, w := range workers {
		pids[i] = w.cmd.Process.Pid
	}
	return f(pids)
}

// finishJobs waits, untimed, until no delivery job is left to run: the
// jobs of messages another job carried (docs/design.md, §Delivery order)
// find their message sent and end, and they end after the drain's last
// message. Left to the next phase, a drain's leftovers would run, and be
// counted, in it (the 3-worker drain ran the 1-worker drain's ~4,900
// leftover jobs, while its own waited for the deep conversation's).
func (b *sendBench) finishJobs(ctx context.Context) error {
	deadline := time.Now().Add(b.cfg.DeliveryTimeout)
	for {
		var left int
		if err := b.d.Pool.QueryRow(ctx, `SELECT count(*) FROM river.river_job
			WHERE kind = 'message_delivery' AND state IN ('available', 'pending', 'running', 'scheduled')`).Scan(&left); err != nil {
			return fmt.Errorf("delivery jobs left: %w", err)
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d delivery jobs still to run after -delivery-timeout %s", left, b.cfg.DeliveryTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// workersDelivering counts the River clients (one per worker process) that
// finished a delivery job since since.
func (b *sendBench) workersDelivering(ctx context.Context, since time.Time) (int, error) {
	var n int
	if err := b.d.Pool.QueryRow(ctx, `SELECT count(DISTINCT attempted_by[array_upper(attempted_by, 1)])
		FROM river.river_job WHERE kind = 'message_delivery' AND state = 'completed' AND finalized_at >= $1`,
		since).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the workers that delivered: %w", err)
	}
	return n, nil
}

// conversationTenant provisions the deep conversation's organization, with
// one sender, as the fixtures provision theirs (the tenant after the last
// fixture's, so that its sender's phone is its own), and sets its sender
// throttle to -conversation-rate and -conversation-burst.
func (b *sendBench) conversationTenant(ctx context.Context) (benchTenant, error) {
	f, err := newFixtures(ctx, b.d, b.pepper, fixtureConfig{Senders: 1, DailyLimit: 100000000}, false)
	if err != nil {
		return benchTenant{}, err
	}
	bt, err := f.tenant(ctx, len(b.tenants))
	if err != nil {
		return benchTenant{}, fmt.Errorf("organization: %w", err)
	}
	if _, err := b.d.Pool.Exec(ctx, `UPDATE central.organizations SET sender_rate = $2, sender_burst = $3 WHERE id = $1`,
		bt.Tenant.OrgID, b.cfg.ConversationRate, b.cfg.ConversationBurst); err != nil {
		return benchTenant{}, fmt.Errorf("sender throttle: %w", err)
	}
	return bt, nil
}

// conversation has platform api (at addr) accept -conversation messages
// from conv's sender to one recipient, one after the other (so that id
// order is acceptance order), then the workers deliver them.
func (b *sendBench) conversation(ctx context.Context, g *loadGen, addr string, conv benchTenant) (*conversationDrain, error) {
	n := int64(b.cfg.Conversation)
	c := &conversationDrain{Rate: b.cfg.ConversationRate, Burst: b.cfg.ConversationBurst}
	if over := n - int64(c.Burst); over > 0 {
		c.Minimum = time.Duration(float64(over) / c.Rate * float64(time.Second))
	}
	g.progress = b.prog.phase(fmt.Sprintf("deep conversation: accepting %d messages to one recipient (no workers)", n))
	// One recipient: sendRequests spreads over -recipients, so a request
	// builder of its own.
	url := "http://" + addr + "/api/v1/messages"
	build := func(i int64) (*http.Request, error) {
		body := fmt.Sprintf(`{"to_phone":%q,"type":"text","sender_number_id":%d,"content":"Deep conversation, message %d","client_reference":%q}`,
			recipientPhone(0), conv.Senders[0], i, conversationDrainTag)
		// The load generator gives each request its run's context.
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", conv.APIKey)
		return req, nil
	}
	acc, err := g.closed(ctx, 1, 10*time.Minute, build, func(ok int64) bool { return ok >= n })
	if err != nil {
		return c, fmt.Errorf("accept: %w", err)
	}
	if acc.OK != n {
		return c, fmt.Errorf("accept: %d of %d accepted (%d errors, first: %s)", acc.OK, n, acc.Errors, acc.FirstError)
	}
	c.Messages = acc.OK
	ts := []benchTenant{conv}
	started := time.Now()
	// The throttle's minimum, plus the usual timeout for the rest.
	timeout := c.Minimum + b.cfg.DeliveryTimeout
	err = b.withWorkers(ctx, b.cfg.DrainWorkers, func([]int) error {
		p := b.prog.phase(fmt.Sprintf("deep conversation: %d platform workers delivering %d messages at %g/s (burst %d)",
			b.cfg.DrainWorkers, n, c.Rate, c.Burst))
		var err error
		c.Drain, err = waitDrain(ctx, b.countTagged(ts, conversationDrainTag, "status IN ('sent', 'delivered')", "sent_at"), n, timeout, p)
		return err
	})
	if err != nil {
		return c, err
	}
	if c.Check, err = b.delivered(ctx, ts, conversationDrainTag, n); err != nil {
		return c, err
	}
	if c.Delivering, err = b.workersDelivering(ctx, started); err != nil {
		return c, err
	}
	return c, b.checkOrder(ctx, conv, c)
}

// checkOrder reads the network's messages of the conversation in the
// order the network took them (network.messages by id; the reference is
// "<tenant schema>:<message id>") and checks that their message ids rise:
// acceptance order.
func (b *sendBench) checkOrder(ctx context.Context, conv benchTenant, c *conversationDrain) error {
	rows, err := b.d.Pool.Query(ctx, `SELECT n.id, m.id FROM network.messages n
		JOIN `+conv.Tenant.Table("messages")+` m ON n.reference = $1 || ':' || m.id
		WHERE m.client_reference = $2 ORDER BY n.id`, conv.Tenant.Schema, conversationDrainTag)
	if err != nil {
		return fmt.Errorf("network order: %w", err)
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		var netID, id int64
		if err := rows.Scan(&netID, &id); err != nil {
			return fmt.Errorf("network order: %w", err)
		}
		c.NetworkRows++
		if id <= last {
			if c.Inversions == 0 {
				c.FirstInversion = fmt.Sprintf("message %d reached the network (network id %d, position %d) after message %d",
					id, netID, c.NetworkRows, last)
			}
			c.Inversions++
		}
		last = max(last, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("network order: %w", err)
	}
	c.InOrder = c.Inversions == 0 && c.NetworkRows == c.Messages
	return nil
}

// workersTarget is the drain over several workers against one worker's,
// both spread over the recipients: at least 90% of its rate.
func workersTarget(w *workersDrain) target {
	return atLeast(fmt.Sprintf("delivery drain, %d workers vs 1 worker (spread), %%", w.Workers),
		roundMS(w.Ratio*100), 90, w.One.Check.ExactlyOnce, w.Spread.Check.ExactlyOnce)
}

// check fails when a message of the phases was not sent exactly once, or
// the conversation reached the network out of acceptance order.
func (w *workersDrain) check() error {
	for _, r := range []drainRun{w.One, w.Spread, w.Conversations} {
		if c := r.Check; !c.ExactlyOnce {
			return fmt.Errorf("drain over %d workers, %d recipients: exactly-once check failed: accepted %d, rows %d, sent %d, network rows %d",
				r.Workers, r.Recipients, c.Accepted, c.Rows, c.Sent, c.NetworkRows)
		}
	}
	c := w.Conversation
	if c == nil {
		return nil
	}
	if !c.Check.ExactlyOnce {
		return fmt.Errorf("deep conversation: exactly-once check failed: accepted %d, rows %d, sent %d, network rows %d",
			c.Check.Accepted, c.Check.Rows, c.Check.Sent, c.Check.NetworkRows)
	}
	if !c.InOrder {
		return fmt.Errorf("deep conversation: not in acceptance order: %d network messages of %d, %d inversion(s); %s",
			c.NetworkRows, c.Messages, c.Inversions, c.FirstInversion)
	}
	return nil
}

// line prints one drain run (line as printSendReport's).
func (r drainRun) line(line func(name, value string), name string) {
	line(name, fmt.Sprintf("%9.0f /s  (%d messages to %d recipients, %d of %d workers delivered, exactly once %v; CPU a message: %.3f ms, the workers %.3f, their backends %.3f)",
		r.Drain.Rate, r.Drain.Jobs, r.Recipients, r.Delivering, r.Workers, r.Check.ExactlyOnce, r.CPU, r.CPUWorkers, r.CPU-r.CPUWorkers))
}

// print writes the phase's lines of the table (line as printSendReport's;
// oneWorker is the 1-worker drain's rate, over -recipients).
func (w *workersDrain) print(line func(name, value string), oneWorker float64) {
	w.One.line(line, "delivery drain, 1 worker process (spread)")
	w.Spread.line(line, fmt.Sprintf("delivery drain, %d worker processes (spread)", w.Workers))
	t := workersTarget(w)
	line(fmt.Sprintf("  %d workers vs 1 worker (goal >= 90%%)", w.Workers),
		fmt.Sprintf("%8.1f %%  (%.0f /s against %.0f /s; DB_MAX_CONNS %d each)  met %v", 100*w.Ratio, w.Spread.Drain.Rate, w.One.Drain.Rate, w.DBMaxConns, t.Met))
	w.Conversations.line(line, fmt.Sprintf("delivery drain, %d workers (conversations)", w.Workers))
	line(fmt.Sprintf("  %d workers vs 1 worker (conversations)", w.Workers),
		fmt.Sprintf("%8.1f %%  (%.0f /s against the 1-worker drain's %.0f /s)", 100*w.ConversationsRatio, w.Conversations.Drain.Rate, oneWorker))
	c := w.Conversation
	if c == nil {
		return
	}
	line(fmt.Sprintf("deep conversation, %d workers (1 sender, 1 recipient)", w.Workers),
		fmt.Sprintf("%8.2f s  (%d messages, %.1f /s; throttle %g/s, burst %d: at least %.2f s; %d of %d workers delivered; exactly once %v)",
			c.Drain.Elapsed.Seconds(), c.Messages, c.Drain.Rate, c.Rate, c.Burst, c.Minimum.Seconds(), c.Delivering, w.Workers, c.Check.ExactlyOnce))
	order := fmt.Sprintf("%v  (%d network messages of %d, %d inversion(s))", c.InOrder, c.NetworkRows, c.Messages, c.Inversions)
	if c.FirstInversion != "" {
		order += "; first: " + c.FirstInversion
	}
	line("  in acceptance order (network.messages by id)", order)
}
