package cli

// The interactive `petrel top`: a tview (tcell) screen refreshed every interval.

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
	limit    int
	app      *tview.Application
	header   *tview.TextView
	brokers  *tview.Table
	parts    *tview.Table
}

// newTopUI builds the view; screen nil is the terminal (tests pass a simulation screen,
// initialised here).
func newTopUI(src *topSource, interval time.Duration, limit int, screen tcell.Screen) *topUI {
	u := &topUI{src: src, interval: interval, limit: limit, app: tview.NewApplication(),
		header: tview.NewTextView().SetDynamicColors(true), brokers: tview.NewTable().SetFixed(1, 0),
		parts: tview.NewTable().SetFixed(1, 0)}
	if screen != nil {
		u.app.SetScreen(screen)
	}
	u.brokers.SetBorder(true).SetTitle(" brokers ")
	u.parts.SetBorder(true).SetTitle(" busiest partitions ")
	footer := tview.NewTextView().SetDynamicColors(true).SetText("[::d]q quit · refresh every " + interval.String())
	layout := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(u.header, 2, 0, false).
		AddItem(u.brokers, 0, 1, false).
		AddItem(u.parts, 0, 1, false).
		AddItem(footer, 1, 0, false)
	u.app.SetRoot(layout, true)
	u.app.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Rune() == 'q' || ev.Key() == tcell.KeyEscape {
			u.app.Stop()
			return nil
		}
		return ev
	})
	return u
}

func fillTable(t *tview.Table, rows [][]string) {
	t.Clear()
	for r, row := range rows {
		for col, text := range row {
			cell := tview.NewTableCell(text).SetExpansion(1)
			if r == 0 {
				cell.SetTextColor(tcell.ColorBlack).SetBackgroundColor(tcell.ColorGreen).SetSelectable(false)
			}
			if col > 2 {
				cell.SetAlign(tview.AlignRight)
			}
			t.SetCell(r, col, cell)
		}
	}
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
			v := buildTopView(prev, cur, u.limit)
			prev = cur
			u.app.QueueUpdateDraw(func() {
				text := "[::b]petrel top[::-]  " + tview.Escape(v.summary)
				if len(v.warnings) > 0 {
					text += "\n[yellow]" + tview.Escape(strings.Join(v.warnings, "; "))
				}
				u.header.SetText(text)
				fillTable(u.brokers, v.brokers)
				fillTable(u.parts, v.partitions)
			})
		}
	}()
	err := u.app.Run()
	cancel()
	return err
}
