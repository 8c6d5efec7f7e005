package daemon

import (
	"fmt"
	"time"

	"github.com/xdpcac/xdpcac/api"
	"github.com/xdpcac/xdpcac/cac/config"
	"github.com/xdpcac/xdpcac/loader"
)

// reload reads file and puts it in force, with a new measure when what
// the loop measures changed (nil when it did not). On any error nothing
// changes: the measure is built before anything is attached or applied,
// and attachAll takes back what it attached.
func (d *Daemon) reload(call applyCall, cur *config.Config) (*config.Config, loader.Options, *measure, error) {
	file := call.file
	next, opts, err := LoadOptions(file)
	if err == nil && len(next.Interfaces) == 0 {
		err = fmt.Errorf("%s lists no interfaces: add interfaces: [{name: IFACE}]", file)
	}
	if err == nil {
		err = d.checkInterfaces(next)
	}
	if err == nil {
		// Before anything is attached or taken over: a size the tables in
		// force cannot have refuses the file and changes nothing.
		err = loader.CheckTableSizes(d.cfg.StateDir, opts)
	}
	readGID := -1
	if err == nil {
		if readGID, err = lookupReadGroup(next.API.ReadGroup); err != nil {
			err = fmt.Errorf("%s: %w", file, err)
		}
	}
	var nm *measure
	if err == nil && !sameMeasure(cur, next) {
		nm, err = d.newMeasure(next)
	}
	if err == nil {
		opts.AgentAddrs = d.carryAgentAddrs(next, opts.AgentAddrs)
	}
	if err == nil {
		err = d.preflight(next)
	}
	if err == nil {
		if _, err = d.attachAll(next, opts); err != nil && nm != nil {
			nm.close()
			nm = nil
		}
	}
	var gerr error
	if err == nil {
		if gerr = d.setReadGroup(api.PathsOf(d.cfg.StateDir).Socket, readGID, next.API.ReadGroup); gerr != nil {
			d.log.Warn("the readers' group of the new configuration", "err", gerr)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.status.LastError, d.reloadRefused = err.Error(), true
		d.log.Error("reload refused; the configuration in force stays", "config", file, "err", err)
		return nil, opts, nil, err
	}
	d.status.Config, d.status.LoadedAt, d.status.LastError = file, d.cfg.Now(), ""
	d.status.Interfaces, d.reloadRefused = d.configured(next), false
	if gerr != nil {
		d.status.LastError = gerr.Error() // in force, but not its readers' group
	}
	if call.adopt {
		d.status.ReloadConfig = file
	}
	d.log.Info("reloaded", "config", file)
	return next, opts, nm, nil
}

// wait serves link events and keeps the pins while the control loop runs, until the loop
// ends or a stop is asked for (nil), or a reload is asked for.
func (d *Daemon) wait(cfg *config.Config, opts loader.Options, done chan error, links <-chan linkEvent) *applyCall {
	pins := time.NewTicker(pinCheckEvery)
	defer pins.Stop()
	d.served.Store(time.Now().UnixNano())
	for {
		select {
		case <-pins.C:
			d.served.Store(time.Now().UnixNano())
			d.keepPins()
		case err := <-done:
			done <- err // for the caller
			return nil
		case ev := <-links:
			d.linkEvent(cfg, opts, ev)
		case <-d.reloads:
			return &applyCall{file: d.reloadFile()}
		case c := <-d.applies:
			return &c
		}
	}
}
