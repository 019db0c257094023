package sasl

import (
	"context"
	"testing"
	"time"
)

// The parsers of what clients send in SaslAuthenticate: whatever the
// bytes, a login step answers or fails, and never panics.

func FuzzSCRAM(f *testing.F) {
	f.Add([]byte("n,,n=alice,r=abcdefgh"), []byte("c=biws,r=abcdefgh,p=AAAA"))
	f.Add([]byte("y,a=bob,n=alice,r=x"), []byte("c=eSws,r=x,p=="))
	f.Add([]byte("p=tls-unique,,n=alice,r=x"), []byte(""))
	f.Add([]byte("n,,n=al=2Cice,r=x,ext=1"), []byte("c=biws,r=xx,e=bad"))
	f.Add([]byte("n,,n=tok-1,r=abcdefgh,tokenauth=true"), []byte("c=biws,r=abcdefgh,p=AAAA"))
	f.Add([]byte("n,,n=tok-1,r=x,tokenauth"), []byte("c=biws,r=x,p=AAAA"))
	a := newAuth(f, Config{Tokens: testTokens(f, time.Now().Add(time.Hour))})
	f.Fuzz(func(t *testing.T, first, final []byte) {
		for _, mech := range []string{ScramSHA256, ScramSHA512} {
			ex, _ := a.Start(mech)
			if _, done, err := ex.Step(context.Background(), first); err != nil || done {
				continue
			}
			if _, done, err := ex.Step(context.Background(), final); done && err == nil {
				t.Fatalf("%s: a login with a forged proof succeeded", mech)
			}
		}
	})
}

func FuzzOAuthBearer(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIiwiZXhwIjo5OTk5OTk5OTk5fQ.\x01\x01"))
	f.Add([]byte("n,a=x,\x01auth=Bearer a.b.c\x01k=v\x01\x01"))
	f.Add([]byte("y,,\x01\x01"))
	f.Add([]byte("n,,\x01auth=Bearer \x01\x01"))
	a := newAuth(f, Config{Mechanisms: []string{OAuthBearer}, OAuth: OAuthConfig{Unsecured: true}})
	f.Fuzz(func(t *testing.T, msg []byte) {
		ex, _ := a.Start(OAuthBearer)
		answer, done, err := ex.Step(context.Background(), msg)
		if err == nil && !done {
			if _, done, err = ex.Step(context.Background(), []byte("\x01")); err == nil || done {
				t.Fatalf("a refused token (challenge %q) then logged in", answer)
			}
		}
	})
}

func FuzzPlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("a\x00b\x00c\x00d"))
	a := newAuth(f, Config{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		ex, _ := a.Start(Plain)
		_, done, err := ex.Step(context.Background(), msg)
		if done != (err == nil) {
			t.Fatalf("done %v with error %v", done, err)
		}
	})
}
