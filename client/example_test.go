package client_test

import (
	"context"
	"fmt"
	"os"

	"github.com/bizmsg/platform/client"
)

// Send a text message with an API key and print its id and status: the
// README's example. It has no Output comment, so go test compiles it
// without running it (it needs a running service).
func Example() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses("http://localhost:8080", client.WithAPIKey(os.Getenv("BIZMSG_API_KEY")))
	if err != nil {
		fmt.Println(err)
		return
	}
	senderID := int64(1)
	rsp, err := c.TenantSendMessageWithResponse(ctx, nil, client.SendMessageRequest{
		SenderNumberId: &senderID, ToPhone: "+14155550199", Type: client.Text, Content: new("Your order has shipped."),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := client.Check(rsp.StatusCode(), rsp.Body); err != nil {
		fmt.Println(err) // an *client.Error: Code, Message, Errors (field → messages), RequestId
		return
	}
	fmt.Println(rsp.JSON202.Data.Id, rsp.JSON202.Data.Status) // 42 queued
}
