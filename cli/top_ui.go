package cli

// The interactive `petrel top`: a tview (tcell) screen refreshed every interval, laid
// out to fit 80 columns: the summary, the brokers, the consumer groups by lag and the
// busiest partitions.

import (
	"context"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// topUI is the interactive view.
type topUI struct {
	src      *topSource
	interval time.Duration
	limits   topLimits
	app      *tview.Application
	layout   *tview.Flex
	header   *tview.TextView
	brokers  *tview.Table
	groups   *tview.Table
	parts    *tview.Table
}

// newTopUI builds the view; screen nil is the terminal (tests pass a simulation screen,
// initialised here).
func newTopUI(src *topSource, interval time.Duration, limits topLimits, screen tcell.Screen) *topUI {
	u := &topUI{src: src, interval: interval, limits: limits, app: tview.NewApplication(),
		header: tview.NewTextView().SetDynamicColors(true), brokers: tview.NewTable().SetFixed(1, 0),
		groups: tview.NewTable().SetFixed(1, 0), parts: tview.NewTable().SetFixed(1, 0)}
	if screen != nil {
		u.app.SetScreen(screen)
	}
	u.header.SetText("[::b]petrel top[::-]  waiting for the first samples…")
	u.brokers.SetBorder(true).SetTitle(" brokers ")
	u.groups.SetBorder(true).SetTitle(" consumer groups by lag ")
	u.parts.SetBorder(true).SetTitle(" busiest partitions ")
	footer := tview.NewTextView().SetDynamicColors(true).SetText("[::d]q quit · refresh every " + interval.String())
	u.layout = tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(u.header, 3, 0, false).
		AddItem(u.brokers, 5, 0, false).
		AddItem(u.groups, 0, 1, false).
		AddItem(u.parts, 0, 1, false).
		AddItem(footer, 1, 0, false)
	u.app.SetRoot(u.layout, true)
	u.app.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Rune() == 'q' || ev.Key() == tcell.KeyEscape {
			u.app.Stop()
			return nil
		}
		return ev
	})
	return u
}

// fillTable shows rows (the first a header); right[i] right-aligns column i; a DOWN
// cell is red.
func fillTable(t *tview.Table, rows [][]string, right []bool) {
	t.Clear()
	for r, row := range rows {
		for col, text := range row {
			cell := tview.NewTableCell(text).SetExpansion(1)
			switch {
			case r == 0:
				cell.SetTextColor(tcell.ColorBlack).SetBackgroundColor(tcell.ColorGreen).SetSelectable(false)
			case text == stateDown:
				cell.SetTextColor(tcell.ColorRed).SetAttributes(tcell.AttrBold)
			}
			if col < len(right) && right[col] {
				cell.SetAlign(tview.AlignRight)
			}
			t.SetCell(r, col, cell)
		}
	}
}

// show draws a view.
func (u *topUI) show(v topView) {
	text := "[::b]petrel top[::-]  " + tview.Escape(v.summary[0]) + "\n" + tview.Escape(v.summary[1])
	if len(v.warnings) > 0 {
		text += "\n[yellow]" + tview.Escape(strings.Join(v.warnings, "; "))
	} else {
		text += "\n[::d]" + tview.Escape(v.legend)
	}
	u.header.SetText(text)
	fillTable(u.brokers, v.brokers, brokerColumnsRight)
	u.layout.ResizeItem(u.brokers, len(v.brokers)+2, 0)
	fillTable(u.groups, v.groups, []bool{false, true, true})
	fillTable(u.parts, v.partitions, []bool{false, true, true, true, true})
}

// run shows the view until q, Escape or Ctrl-C (or parent ends).
func (u *topUI) run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	go func() {
		defer u.app.Stop()
		showErr := func(err error) {
			u.app.QueueUpdateDraw(func() { u.header.SetText("[red]" + tview.Escape(err.Error())) })
		}
		prev, err := u.src.sample(ctx)
		if err != nil {
			showErr(err)
		}
		tick := time.NewTicker(u.interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cur, err := u.src.sample(ctx)
			if err != nil {
				showErr(err)
				continue
			}
			if prev == nil {
				prev = cur
				continue
			}
			v := buildTopView(prev, cur, u.limits)
			prev = cur
			u.app.QueueUpdateDraw(func() { u.show(v) })
		}
	}()
	err := u.app.Run()
	cancel()
	return err
}
