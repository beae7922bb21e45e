package delivery

import (
	"os"
	"testing"

	"github.com/bizmsg/platform/platform/db"
)

func TestZZPrint(t *testing.T) {
	tn := db.Tenant{OrgID: 1, Schema: "tenant_1"}
	w := func(n, s string) { os.WriteFile("/tmp/route47/"+n+".sql", []byte(s), 0o644) }
	w("claimone", claimOneSQL(tn))
	w("claimmany", claimManySQL(tn))
	w("markone", markOneSentSQL(tn, true))
	w("markmany", markSentSQL(tn, false))
	w("next", nextSQL(tn))
	w("lockmsgs", lockMessagesSQL(tn.Quoted(), "$1::bigint[]", "$2::bigint[]", "$3::timestamptz", "$4::float8"))
}
