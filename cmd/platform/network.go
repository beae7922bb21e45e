package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
)

const networkUsage = `Usage: platform network <command> [flags]

Operate the built-in messaging network (NETWORK=builtin) in the database named
by DATABASE_URL: its accounts, blocks and inboxes, and act as the people who
hold the accounts (read, send).

Commands:
  add-account     create or update an account
  verify-account  mark an account's owner verified
  block           make an account block a sender
  unblock         lift a block
  inbox           print the messages an account received, newest last
  read            make an account read the messages it received
  send            make an account write a text message to another
  templates       review organizations' message templates (list, approve,
                  reject, pause, disable)

Every command prints JSON with --json. Run 'platform network <command> -h' for
its flags.
`

// runNetwork runs `platform network <command>`.
func runNetwork(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	block := func(block bool) command {
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return networkBlock(ctx, args, stdout, stderr, block)
		}
	}
	return dispatch(ctx, args, stdout, stderr, networkUsage, "network command", map[string]command{
		"add-account":    networkAddAccount,
		"verify-account": networkVerifyAccount,
		"block":          block(true),
		"unblock":        block(false),
		"inbox":          networkInbox,
		"read":           networkRead,
		"send":           networkSend,
		"templates":      networkTemplates,
	})
}

// networkFlags returns the flag set of a network command, whose -h prints
// synopsis, what the command does, and its flags.
func networkFlags(name, synopsis, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("network "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: platform network %s %s\n\n%s\n\nFlags:\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// withNetwork opens the database and runs f with the built-in network on it.
func withNetwork(ctx context.Context, stderr io.Writer, f func(*builtin.Network) error) error {
	d, err := openDB(ctx, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	n, err := builtin.New(builtin.Config{DB: d})
	if err != nil {
		return err
	}
	return f(n)
}

func networkAddAccount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := networkFlags("add-account", "--phone P [--unverified] [--phone-unverified] [--receiving-disabled] [--json]",
		"Create the account of a phone, or update it, to the state the flags give. By default the\n"+
			"account is verified, its phone verified, and it receives messages.", stderr)
	fs.String("phone", "", "the account's phone, international format (+14155552671); required")
	unverified := fs.Bool("unverified", false, "the account owner is not verified")
	phoneUnverified := fs.Bool("phone-unverified", false, "the account's phone is not verified")
	receivingDisabled := fs.Bool("receiving-disabled", false, "the account does not receive messages")
	asJSON := fs.Bool("json", false, "print the account as JSON")
	phones, err := parsePhones(fs, args, "phone")
	if err != nil {
		return err
	}
	return withNetwork(ctx, stderr, func(n *builtin.Network) error {
		a, err := n.AddAccount(ctx, builtin.AccountSpec{
			Phone:            phones[0],
			Verified:         !*unverified,
			PhoneVerified:    !*phoneUnverified,
			ReceivingEnabled: !*receivingDisabled,
		})
		if err != nil {
			return err
		}
		return printAccount(stdout, a, *asJSON)
	})
}

func networkVerifyAccount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := networkFlags("verify-account", "--phone P [--json]",
		"Mark the owner of an account verified, as the network does when the owner completes\n"+
			"account verification. Sender numbers waiting for it become active.", stderr)
	fs.String("phone", "", "the account's phone, international format; required")
	asJSON := fs.Bool("json", false, "print the account as JSON")
	phones, err := parsePhones(fs, args, "phone")
	if err != nil {
		return err
	}
	return withNetwork(ctx, stderr, func(n *builtin.Network) error {
		a, err := n.VerifyAccount(ctx, phones[0])
		if err != nil {
			return err
		}
		return printAccount(stdout, a, *asJSON)
	})
}

func networkBlock(ctx context.Context, args []string, stdout, stderr io.Writer, block bool) error {
	name, about := "block", "Make the account of --phone block the account of --sender: lookups from that sender\n"+
		"report blocked_sender and its messages are refused."
	if !block {
		name, about = "unblock", "Lift a block made with 'platform network block'."
	}
	fs := networkFlags(name, "--phone RECIPIENT --sender SENDER_PHONE [--json]", about, stderr)
	fs.String("phone", "", "the blocking account's phone, international format; required")
	fs.String("sender", "", "the blocked sender's phone, international format; required")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	phones, err := parsePhones(fs, args, "phone", "sender")
	if err != nil {
		return err
	}
	recipient, sender := phones[0], phones[1]
	return withNetwork(ctx, stderr, func(n *builtin.Network) error {
		op := n.Block
		if !block {
			op = n.Unblock
		}
		if err := op(ctx, recipient, sender); err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, blockJSON{Phone: recipient, Sender: sender, Blocked: block})
		}
		if block {
			_, err = fmt.Fprintf(stdout, "%s blocks %s\n", recipient, sender)
		} else {
			_, err = fmt.Fprintf(stdout, "%s no longer blocks %s\n", recipient, sender)
		}
		return err
	})
}

func networkInbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := networkFlags("inbox", "--phone P [--last N] [--json]",
		"Print the messages the account received, newest last, each with its receipt state:\n"+
			"delivered, or read (see 'platform network read'). OTP messages come from\n"+
			"\""+builtin.ServicePhone+"\", the platform's own account.", stderr)
	fs.String("phone", "", "the account's phone, international format; required")
	last := fs.Int("last", 0, "print only the last N messages (0: all)")
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	phones, err := parsePhones(fs, args, "phone")
	if err != nil {
		return err
	}
	if *last < 0 {
		return errors.New("--last must be 0 or more")
	}
	return withNetwork(ctx, stderr, func(n *builtin.Network) error {
		msgs, err := n.InboxLast(ctx, phones[0], *last)
		if err != nil {
			return err
		}
		return printMessages(stdout, msgs, *asJSON, "no messages for "+phones[0])
	})
}

func networkRead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := networkFlags("read", "--phone RECIPIENT [--sender SENDER_PHONE] [--json]",
		"Make the account of --phone read every message it received and has not read yet (only\n"+
			"those from --sender, when given), as its holder opening the conversation would. Each\n"+
			"becomes read; messages read before are left alone. Prints the messages read, oldest\n"+
			"first. The platform learns of it when its worker drains the network's events.", stderr)
	fs.String("phone", "", "the reading account's phone, international format; required")
	rawSender := fs.String("sender", "", "read only the messages from this phone, international format")
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	phones, err := parsePhones(fs, args, "phone")
	if err != nil {
		return err
	}
	recipient, sender, none := phones[0], "", "no unread messages for "+phones[0]
	if *rawSender != "" {
		if sender, err = phoneFlag("sender", *rawSender); err != nil {
			return err
		}
		none += " from " + sender
	}
	return withNetwork(ctx, stderr, func(n *builtin.Network) error {
		msgs, err := n.Read(ctx, recipient, sender)
		if err != nil {
			return err
		}
		return printMessages(stdout, msgs, *asJSON, none)
	})
}

func networkSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := networkFlags("send", "--from PHONE --to PHONE --text TEXT [--json]",
		"Make the account of --from write a text message to the account of --to, as its holder\n"+
			"would in a messaging app. It goes into the pair's conversation and is delivered at\n"+
			"once; to an organization's sender number it is an inbound message for the platform,\n"+
			"which learns of it when its worker drains the network's events.", stderr)
	fs.String("from", "", "the writing account's phone, international format; required")
	fs.String("to", "", "the recipient account's phone, international format; required")
	text := fs.String("text", "", "the message; required")
	asJSON := fs.Bool("json", false, "print the message as JSON")
	phones, err := parsePhones(fs, args, "from", "to")
	if err != nil {
		return err
	}
	from, to := phones[0], phones[1]
	if *text == "" {
		return errors.New("--text is required")
	}
	return withNetwork(ctx, stderr, func(n *builtin.Network) error {
		m, err := n.Send(ctx, from, to, *text)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, messageToJSON(m))
		}
		_, err = fmt.Fprintf(stdout, "%s wrote to %s: message %d in conversation %d, reference %s\n",
			m.FromPhone, m.ToPhone, m.MessageID, m.ConversationID, m.Reference)
		return err
	})
}

// printMessages prints msgs as JSON, one object a line, when asJSON; else
// as a table, one message a row, or the line none when there are none.
func printMessages(w io.Writer, msgs []builtin.InboxMessage, asJSON bool, none string) error {
	if asJSON {
		for _, m := range msgs {
			if err := writeJSON(w, messageToJSON(m)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(msgs) == 0 {
		_, err := fmt.Fprintln(w, none)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED_AT\tFROM\tTYPE\tRECEIPT\tCONTENT")
	for _, m := range msgs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", clock.Format(m.CreatedAt), m.FromPhone, m.Type, m.Receipt(), describe(m))
	}
	return tw.Flush()
}

// accountJSON is an account as --json prints it.
type accountJSON struct {
	ID               int64   `json:"id"`
	Phone            string  `json:"phone"`
	Verified         bool    `json:"verified"`
	VerifiedAt       *string `json:"verified_at"`
	PhoneVerified    bool    `json:"phone_verified"`
	PhoneVerifiedAt  *string `json:"phone_verified_at"`
	ReceivingEnabled bool    `json:"receiving_enabled"`
}

// blockJSON is the result of block and unblock as --json prints it.
type blockJSON struct {
	Phone   string `json:"phone"`
	Sender  string `json:"sender"`
	Blocked bool   `json:"blocked"`
}

// messageJSON is one message as --json prints it (inbox, read, send).
type messageJSON struct {
	MessageID      int64  `json:"message_id"`
	ConversationID int64  `json:"conversation_id"`
	FromPhone      string `json:"from_phone"`
	ToPhone        string `json:"to_phone"`
	network.Media
	Reference   string  `json:"reference"`
	CreatedAt   string  `json:"created_at"`
	Receipt     string  `json:"receipt"`
	DeliveredAt string  `json:"delivered_at"`
	ReadAt      *string `json:"read_at"`
}

func messageToJSON(m builtin.InboxMessage) messageJSON {
	return messageJSON{
		MessageID: m.MessageID, ConversationID: m.ConversationID, FromPhone: m.FromPhone, ToPhone: m.ToPhone,
		Media: m.Media, Reference: m.Reference,
		CreatedAt: clock.Format(m.CreatedAt), Receipt: m.Receipt(),
		DeliveredAt: clock.Format(m.DeliveredAt), ReadAt: clock.FormatPtr(m.ReadAt),
	}
}

func printAccount(w io.Writer, a network.Account, asJSON bool) error {
	if asJSON {
		return writeJSON(w, accountJSON{
			ID: a.ID, Phone: a.Phone,
			Verified: a.Verified, VerifiedAt: clock.FormatPtr(a.VerifiedAt),
			PhoneVerified: a.PhoneVerified, PhoneVerifiedAt: clock.FormatPtr(a.PhoneVerifiedAt),
			ReceivingEnabled: a.ReceivingEnabled,
		})
	}
	state := []string{"verified", "phone verified", "receiving"}
	if !a.Verified {
		state[0] = "not verified"
	}
	if !a.PhoneVerified {
		state[1] = "phone not verified"
	}
	if !a.ReceivingEnabled {
		state[2] = "receiving disabled"
	}
	_, err := fmt.Fprintf(w, "account %s (id %d): %s\n", a.Phone, a.ID, strings.Join(state, ", "))
	return err
}

// describe is a message's content on one line, with its file details.
func describe(m builtin.InboxMessage) string {
	s := strings.Join(strings.Fields(m.Content), " ")
	if m.FileName == "" && m.FileType == "" {
		return s
	}
	details := []string{m.FileName, m.FileType, fmt.Sprintf("%d bytes", m.FileSize)}
	if m.Duration > 0 {
		details = append(details, fmt.Sprintf("%ds", m.Duration))
	}
	return s + " (" + strings.Join(details, ", ") + ")"
}
