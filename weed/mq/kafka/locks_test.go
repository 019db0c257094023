package kafka

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The ownership rule, first the coordinators' and now every package's: a
// coordinator's state (a group, a transactional id, a share-partition) has
// one owner at a time, the goroutine whose turn it is (the group's
// goroutine; the operation holding a transactional id's or a
// share-partition's turn), and a mutex only guards fields for a moment.
// I/O (every call given a context: the filer, the log, the other gateways)
// is never done under a mutex: what must wait for I/O waits for a turn (a
// semaphore, seaweedmq's turn) within its caller's context, so a slow
// filer or a partitioned gateway holds up the callers willing to wait,
// never a describe, a list, the sweeps or one past its deadline.

// TestNoIOUnderLock checks the rule in every package: no call that takes
// a context between a mutex's Lock and its Unlock (a deferred Unlock holds
// it to the end of the function, also where the function was handed the
// mutex locked). It reads the code as written: a mutex handed over locked
// and released without a defer is not followed.
func TestNoIOUnderLock(t *testing.T) {
	var packages []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != "." && filepath.Base(path) != "e2e" && filepath.Base(path) != "testdata" {
			packages = append(packages, path)
		}
		return err
	})
	if err != nil || len(packages) < 25 {
		t.Fatalf("the packages: %v %v", packages, err)
	}
	for _, pkg := range packages {
		files, err := filepath.Glob(filepath.Join(pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				var body *ast.BlockStmt
				switch fn := n.(type) {
				case *ast.FuncDecl:
					body = fn.Body
				case *ast.FuncLit:
					body = fn.Body
				}
				if body != nil {
					for _, pos := range ioUnderLock(body.List, nil) {
						t.Errorf("%s: I/O under a mutex (the call takes a context): do it outside the lock, on the state's turn", fset.Position(pos))
					}
				}
				return true
			})
		}
	}
}

// ioUnderLock walks statements in order with the mutexes held (by the
// expression locked, e.g. "t.mu") and returns where a call given a
// context is made while one is held. A nested block starts with what is
// held before it and its changes stay inside it (an early Unlock before a
// return in an if does not release the lock after the if).
func ioUnderLock(stmts []ast.Stmt, held []string) []token.Pos {
	var found []token.Pos
	held = slices.Clone(held)
	for _, s := range stmts {
		if d, ok := s.(*ast.DeferStmt); ok {
			// A deferred Unlock holds the mutex to the end, also one
			// handed over locked by the function that locked it.
			if name, op := lockOp(&ast.ExprStmt{X: d.Call}); op == "Unlock" && !slices.Contains(held, name) {
				held = append(held, name)
			}
			continue
		}
		if name, op := lockOp(s); op != "" {
			switch op {
			case "Lock":
				held = append(held, name)
			case "Unlock":
				if i := slices.Index(held, name); i >= 0 {
					held = slices.Delete(held, i, i+1)
				}
			}
			continue
		}
		if len(held) > 0 {
			found = append(found, contextCalls(s)...)
		}
		for _, block := range innerBlocks(s) {
			found = append(found, ioUnderLock(block, held)...)
		}
	}
	return found
}

// lockOp names the mutex a statement locks ("Lock", also RLock) or
// unlocks ("Unlock", also RUnlock, not deferred); a deferred Unlock keeps
// it held to the end and is no operation here.
func lockOp(s ast.Stmt) (string, string) {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return "", ""
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return "", ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	switch sel.Sel.Name {
	case "Lock", "RLock":
		return exprString(sel.X), "Lock"
	case "Unlock", "RUnlock":
		return exprString(sel.X), "Unlock"
	}
	return "", ""
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "?"
}

// contextCalls returns the calls in s, outside its nested blocks and
// function literals, given an argument named ctx or made with
// context.Background/TODO.
func contextCalls(s ast.Stmt) []token.Pos {
	if _, ok := s.(*ast.BlockStmt); ok {
		return nil // its statements are walked one by one
	}
	var found []token.Pos
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // a function of its own, checked as one
		case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause:
			return n == s // walked by ioUnderLock with what is held
		case *ast.CallExpr:
			for _, a := range n.Args {
				if isContext(a) {
					found = append(found, n.Pos())
					break
				}
			}
		}
		return true
	})
	return found
}

func isContext(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "ctx"
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "context" {
				return true
			}
		}
	}
	return false
}

// innerBlocks are the statement lists nested directly in s.
func innerBlocks(s ast.Stmt) [][]ast.Stmt {
	var blocks [][]ast.Stmt
	switch s := s.(type) {
	case *ast.BlockStmt:
		blocks = append(blocks, s.List)
	case *ast.IfStmt:
		blocks = append(blocks, s.Body.List)
		if s.Else != nil {
			blocks = append(blocks, []ast.Stmt{s.Else})
		}
	case *ast.ForStmt:
		blocks = append(blocks, s.Body.List)
	case *ast.RangeStmt:
		blocks = append(blocks, s.Body.List)
	case *ast.SwitchStmt:
		for _, c := range s.Body.List {
			blocks = append(blocks, c.(*ast.CaseClause).Body)
		}
	case *ast.TypeSwitchStmt:
		for _, c := range s.Body.List {
			blocks = append(blocks, c.(*ast.CaseClause).Body)
		}
	case *ast.SelectStmt:
		for _, c := range s.Body.List {
			blocks = append(blocks, c.(*ast.CommClause).Body)
		}
	case *ast.LabeledStmt:
		blocks = append(blocks, []ast.Stmt{s.Stmt})
	}
	return blocks
}

// The check finds I/O under a mutex held by a Lock, by a deferred Unlock
// (also of a mutex handed over locked), inside a block under it, and not
// after an Unlock or in an early return's block.
func TestIOUnderLockFound(t *testing.T) {
	const src = `package p
func a(ctx context.Context) { t.mu.Lock(); save(ctx); t.mu.Unlock() }
func b(ctx context.Context) { t.mu.Lock(); defer t.mu.Unlock(); if x { save(ctx) } }
func c(ctx context.Context) { defer t.mu.Unlock(); for range xs { write(ctx) } }
func d(ctx context.Context) { t.mu.Lock(); x := f(); t.mu.Unlock(); save(ctx) }
func e(ctx context.Context) { t.mu.Lock(); if x { t.mu.Unlock(); return }; t.mu.Unlock(); save(ctx) }
func f(ctx context.Context) { t.mu.Lock(); go func() { save(ctx) }(); t.mu.Unlock() }
func g() { t.mu.Lock(); read(context.Background()); t.mu.Unlock() }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, d := range f.Decls {
		fn := d.(*ast.FuncDecl)
		if len(ioUnderLock(fn.Body.List, nil)) > 0 {
			found = append(found, fn.Name.Name)
		}
	}
	if want := []string{"a", "b", "c", "g"}; !slices.Equal(found, want) {
		t.Fatalf("found I/O under a lock in %v, want %v", found, want)
	}
}
