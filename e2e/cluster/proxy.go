package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ProxyMode is what a Proxy does with traffic.
type ProxyMode int

const (
	// Pass forwards every byte both ways.
	Pass ProxyMode = iota
	// Cut closes every open connection and resets each new one as soon as it is accepted:
	// the instance behind the proxy sees the service go away.
	Cut
	// Blackhole stalls: open connections stop forwarding (what was read is held, not
	// dropped, so a later Pass lets it through, as a healed partition does) and new
	// connections are accepted but not connected to the service until the mode changes. The
	// instance sees a service that never answers.
	Blackhole
)

func (m ProxyMode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Cut:
		return "cut"
	case Blackhole:
		return "blackhole"
	default:
		return fmt.Sprintf("ProxyMode(%d)", int(m))
	}
}

// Proxy is a TCP proxy the harness controls, between one instance and one service
// (PostgreSQL or Redis). Its listening port never changes, so the instance keeps its URL
// across faults and across restarts of the service behind it.
type Proxy struct {
	Name   string // "node-1/postgres"
	Addr   string // 127.0.0.1:port the instance connects to
	target string // the service's host:port

	ln net.Listener

	mu     sync.Mutex
	cond   *sync.Cond // signalled whenever mode changes or the proxy closes
	mode   ProxyMode
	closed bool
	conns  map[*proxyConn]struct{}
	wg     sync.WaitGroup

	accepted, refused atomic.Int64
}

type proxyConn struct {
	client   net.Conn
	upstream net.Conn // nil until connected
	once     sync.Once
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		resetClose(c.client)
		if c.upstream != nil {
			resetClose(c.upstream)
		}
	})
}

// resetClose closes a TCP connection with a reset rather than an orderly FIN, as a broken
// network path looks to the peer.
func resetClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// NewProxy listens on 127.0.0.1:port and forwards to target ("host:port") in Pass mode.
func NewProxy(name string, port int, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	p := &Proxy{Name: name, Addr: ln.Addr().String(), target: target, ln: ln, conns: map[*proxyConn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Mode returns the current mode.
func (p *Proxy) Mode() ProxyMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// SetMode switches the proxy. Cut closes every open connection at once; Blackhole freezes
// them; Pass lets held data and held connections through.
func (p *Proxy) SetMode(m ProxyMode) {
	p.mu.Lock()
	p.mode = m
	var doomed []*proxyConn
	if m == Cut {
		for c := range p.conns {
			doomed = append(doomed, c)
			delete(p.conns, c)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, c := range doomed {
		c.close()
	}
}

// Stats returns how many connections were accepted and how many were refused (Cut).
func (p *Proxy) Stats() (accepted, refused int64) { return p.accepted.Load(), p.refused.Load() }

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	var all []*proxyConn
	for c := range p.conns {
		all = append(all, c)
		delete(p.conns, c)
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range all {
		c.close()
	}
	p.wg.Wait()
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed || p.mode == Cut {
			p.mu.Unlock()
			p.refused.Add(1)
			resetClose(conn)
			continue
		}
		c := &proxyConn{client: conn}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// waitPassable blocks while the proxy is in Blackhole mode and reports whether c may go on
// (false once the proxy was cut or closed, or c was dropped).
func (p *Proxy) waitPassable(c *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if _, ok := p.conns[c]; !ok || p.closed {
			return false
		}
		switch p.mode {
		case Pass:
			return true
		case Cut:
			return false
		}
		p.cond.Wait()
	}
}

func (p *Proxy) drop(c *proxyConn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.cond.Broadcast()
	p.mu.Unlock()
	c.close()
}

func (p *Proxy) serve(c *proxyConn) {
	defer p.wg.Done()
	// A connection accepted during a blackhole is held until the mode changes.
	if !p.waitPassable(c) {
		p.drop(c)
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.drop(c)
		return
	}
	p.mu.Lock()
	if _, ok := p.conns[c]; !ok {
		p.mu.Unlock()
		resetClose(up)
		c.close()
		return
	}
	c.upstream = up
	p.mu.Unlock()
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(c, c.client, up) }()
	go func() { defer both.Done(); p.pipe(c, up, c.client) }()
	both.Wait()
}

// pipe copies src to dst, holding each chunk while the proxy is blackholed. When either
// direction ends, the whole connection is closed.
func (p *Proxy) pipe(c *proxyConn, src, dst net.Conn) {
	defer p.drop(c)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitPassable(c) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a broken connection: either way the whole connection ends
		}
	}
}
