package builtin

import (
	"context"
	"fmt"
	"slices"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/sqlq"
)

// batchItem is a message of a batch that passed check.
type batchItem struct {
	i        int    // index in the batch
	from, to string // normalised phones
	pair     int    // index of (from, to) in the batch's distinct pairs
	// The accounts, set when the message goes into insertMessages.
	senderID, recipientID int64
}

// DeliverBatch delivers msgs as Deliver would deliver each, in order, and
// returns one Result per message, with Deliver's refusals, repeats and
// errors. In the common case it costs two statements for the whole batch
// instead of two per message: batchParties reads the sender and recipient
// accounts of every distinct pair of phones, then insertMessages gets or
// creates the conversations and inserts, in one commit, every message whose
// recipient can receive from its sender.
//
// The rare rest is handed to Deliver's own code, one message at a time, in
// the batch's order, after that statement: a message refused by the accounts
// (a repeat of a reference delivered before the recipient blocked the sender
// still returns its first Delivery), one whose reference exists (a repeat,
// or reference_reused), one whose reference an earlier message of the batch
// has, and one whose pair's conversation a concurrent call created meanwhile.
//
// A batch of one message is Deliver (which shares it with concurrent
// Delivers). A message that fails check gets its refusal. When one of the
// two statements fails, every other message gets that error, wrapped as
// Deliver wraps a transient error, except when the insert fails on the data
// of a message (db.IsDataError): then every message goes through Deliver's
// code.
func (n *Network) DeliverBatch(ctx context.Context, msgs []network.Message) []network.Result {
	if len(msgs) == 1 {
		d, err := n.Deliver(ctx, msgs[0])
		return []network.Result{{Delivery: d, Err: err}}
	}
	return n.deliverBatch(ctx, msgs)
}

// deliverBatch is DeliverBatch on the batch's own statements, for a batch
// of one deliverOne.
func (n *Network) deliverBatch(ctx context.Context, msgs []network.Message) []network.Result {
	out := make([]network.Result, len(msgs))
	if len(msgs) == 1 {
		// deliverOne's statements are smaller and keep a generic plan;
		// Postgres re-plans the batch statements at each run (about
		// 0.3 ms each), which one message does not pay back.
		out[0].Delivery, out[0].Err = n.deliverOne(ctx, msgs[0])
		return out
	}
	var items []*batchItem
	pairs := map[[2]string]int{}
	var froms, tos []string
	for i, msg := range msgs {
		from, to, err := check(msg)
		if err != nil {
			out[i].Err = err
			continue
		}
		p, ok := pairs[[2]string{from, to}]
		if !ok {
			p = len(froms)
			pairs[[2]string{from, to}] = p
			froms, tos = append(froms, from), append(tos, to)
		}
		items = append(items, &batchItem{i: i, from: from, to: to, pair: p})
	}
	if len(items) == 0 {
		return out
	}
	fail := func(err error) []network.Result {
		for _, it := range items {
			out[it.i].Err = transient(msgs[it.i].Reference, err)
		}
		return out
	}

	accounts, err := n.batchParties(ctx, froms, tos)
	if err != nil {
		return fail(err)
	}
	// The first message of each reference goes into insertMessages when its
	// recipient can receive from its sender; the others go to deliver.
	var insert, fallback []*batchItem
	seen := map[string]bool{}
	for _, it := range items {
		ref := msgs[it.i].Reference
		first := !seen[ref]
		seen[ref] = true
		senderID, recipient, err := accounts[it.pair].accounts(it.from, it.to)
		if err == nil {
			err = refusal(senderID, recipient)
		}
		if !first || err != nil {
			fallback = append(fallback, it)
			continue
		}
		it.senderID, it.recipientID = senderID, recipient.ID
		insert = append(insert, it)
	}
	if len(insert) > 0 {
		stored, err := n.insertMessages(ctx, msgs, insert)
		switch {
		case err != nil && !db.IsDataError(err):
			return fail(err)
		case err != nil:
			// One message the database cannot store (a value out of a
			// column's range, a NUL in a text) fails the statement: each
			// message goes on its own, so that only that one fails.
			stored = nil
		}
		for _, it := range insert {
			d, ok := stored[msgs[it.i].Reference]
			if !ok {
				fallback = append(fallback, it)
				continue
			}
			d.RecipientID = it.recipientID
			out[it.i].Delivery = d
		}
	}
	// In the batch's order, so that of two messages with one reference the
	// first is the one delivered.
	slices.SortFunc(fallback, func(a, b *batchItem) int { return a.i - b.i })
	for _, it := range fallback {
		out[it.i].Delivery, out[it.i].Err = n.deliverChecked(ctx, msgs[it.i], it.from, it.to)
	}
	return out
}

// batchParties reads with queries/batch_parties.sql the accounts of each
// pair of phones (froms[i], tos[i]) and returns them in that order.
func (n *Network) batchParties(ctx context.Context, froms, tos []string) ([]partyRow, error) {
	out := make([]partyRow, len(froms))
	rows, err := n.query(ctx, n.pool, "batch_parties", sqlq.Args{"froms": froms, "tos": tos})
	if err != nil {
		return nil, fmt.Errorf("sender and recipient accounts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var r partyRow
		if err := rows.Scan(append([]any{&i}, r.dest()...)...); err != nil {
			return nil, fmt.Errorf("sender and recipient accounts: %w", err)
		}
		out[i-1] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sender and recipient accounts: %w", err)
	}
	return out, nil
}

// insertMessages stores with queries/insert_messages.sql the messages items
// of msgs, whose references are all different, and returns the delivery of
// each message inserted by reference (RecipientID unset). A message missing
// from it was not inserted: its reference exists, or its pair's
// conversation was created concurrently.
func (n *Network) insertMessages(ctx context.Context, msgs []network.Message, items []*batchItem) (map[string]network.Delivery, error) {
	var (
		lows, highs, senders, recipients, fileSizes, durations []int64
		types, contents, fileNames, fileTypes, refs            []string
	)
	for _, it := range items {
		m := msgs[it.i]
		lows = append(lows, min(it.senderID, it.recipientID))
		highs = append(highs, max(it.senderID, it.recipientID))
		senders, recipients = append(senders, it.senderID), append(recipients, it.recipientID)
		types, contents = append(types, m.Type), append(contents, m.Content)
		fileNames, fileSizes = append(fileNames, m.FileName), append(fileSizes, m.FileSize)
		fileTypes, durations = append(fileTypes, m.FileType), append(durations, int64(m.Duration))
		refs = append(refs, m.Reference)
	}
	rows, err := n.query(ctx, n.pool, "insert_messages", sqlq.Args{
		"lows": lows, "highs": highs, "from_ids": senders, "to_ids": recipients, "types": types,
		"contents": contents, "file_names": fileNames, "file_sizes": fileSizes, "file_types": fileTypes,
		"durations": durations, "references": refs, "now": n.clock.Now(),
	})
	if err != nil {
		return nil, fmt.Errorf("insert messages: %w", err)
	}
	defer rows.Close()
	stored := make(map[string]network.Delivery, len(items))
	for rows.Next() {
		var ref string
		var d network.Delivery
		if err := rows.Scan(&ref, &d.MessageID, &d.ConversationID, &d.DeliveredAt); err != nil {
			return nil, fmt.Errorf("insert messages: %w", err)
		}
		d.DeliveredAt, d.Delivered = d.DeliveredAt.UTC(), true
		stored[ref] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("insert messages: %w", err)
	}
	return stored, nil
}
