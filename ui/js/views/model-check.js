// The model check in the models dialog: "Check tool use" on the chosen model runs the probes
// (progress shown, Cancel stops it), then shows each probe's result and time and the tool mode
// it proposes; the last check of a model is remembered by the engine and shown again.
import { el, $ } from '../dom.js';
import { formatTitle } from './models.js';

const OUTCOMES = {
  native: () => 'native call',
  recovered: (o) => `recovered from text (${o.family})`,
  wrongArguments: (o) => `wrong arguments: ${o.detail}`,
  noCall: () => 'no call',
  falseCall: (o) => `false call (${o.name})`,
  failed: (o) => `failed: ${o.message}`,
};

const PROPOSALS = {
  native: 'Tools: native',
  text: 'Tools: in text',
  off: 'Off: this model does not use tools; chat without them',
};

const FROM = { template: 'its chat template', name: 'its name', family: 'its family', learned: 'learned from its chat template' };

export class ModelCheckView {
  /**
   * api: { current() → {provider, model}, format(provider, model), run(provider, model, onEvent),
   *        cancel(provider, model), last(provider, model), apply(model, mode) }
   */
  constructor(root, api) {
    this.root = root;
    this.api = api;
    this.running = null;
    $('#check-start', root).addEventListener('click', () => this.run());
    $('#check-cancel', root).addEventListener('click', () => {
      if (this.running) this.api.cancel(this.running.provider, this.running.model);
    });
    $('#check-apply', root).addEventListener('click', () => this.apply());
  }

  /** Shows the chosen model, its tool-call format and its last check. */
  async show() {
    const { provider, model } = this.api.current();
    $('#check-model-name', this.root).textContent = model || 'none';
    $('#check-start', this.root).disabled = !model || !!this.running;
    $('#check-format', this.root).textContent = '';
    if (!this.running) this.render(null);
    if (!model) return;
    try {
      const f = await this.api.format(provider, model);
      const node = $('#check-format', this.root);
      node.textContent = f ? `Tool-call format: ${f.name} (${f.from === 'learned' ? '' : 'from '}${FROM[f.from] ?? f.from})` : 'Tool-call format: not known';
      node.title = f ? formatTitle(f) : '';
    } catch { /* the server did not say */ }
    if (this.running) return;
    try {
      const last = await this.api.last(provider, model);
      // a check started meanwhile owns the table
      if (last && !this.running && this.api.current().model === model) this.render(last, true);
    } catch { /* nothing remembered */ }
  }

  async run() {
    const { provider, model } = this.api.current();
    if (!model || this.running) return;
    this.running = { provider, model };
    const status = $('#check-status', this.root);
    $('#check-start', this.root).disabled = true;
    $('#check-cancel', this.root).hidden = false;
    const rows = [];
    this.render({ results: rows, proposal: null });
    try {
      const report = await this.api.run(provider, model, (e) => {
        if (e.event === 'probe') {
          status.textContent = `Checking ${e.title.toLowerCase()} (${e.mode}), ${e.index} of ${e.total}…`;
        } else if (e.event === 'result') {
          rows.push(e.result);
          this.render({ results: rows, proposal: null });
        }
      });
      this.render(report);
    } catch (err) {
      status.textContent = err?.message ?? String(err);
    } finally {
      this.running = null;
      $('#check-start', this.root).disabled = false;
      $('#check-cancel', this.root).hidden = true;
    }
  }

  /** The table of a report (or of the results so far), and its proposal. */
  render(report, remembered = false) {
    const table = $('#check-table', this.root);
    const body = $('tbody', table);
    const status = $('#check-status', this.root);
    const proposal = $('#check-proposal', this.root);
    this.report = report;
    if (!report) {
      table.hidden = true;
      proposal.hidden = true;
      status.textContent = '';
      return;
    }
    table.hidden = report.results.length === 0;
    body.replaceChildren(...report.results.map((r) => el('tr', { class: r.passed ? 'passed' : 'failed', dataset: { probe: r.probe, mode: r.mode } },
      el('td', {}, r.title),
      el('td', {}, r.mode),
      el('td', { class: 'check-outcome' }, `${r.passed ? '✓' : '✗'} ${(OUTCOMES[r.outcome.kind] ?? (() => r.outcome.kind))(r.outcome)}`),
      el('td', { class: 'num' }, `${r.ms} ms`))));
    if (report.proposal) {
      status.textContent = report.cancelled ? 'Stopped.'
        : remembered ? `Last checked ${new Date(report.checkedAt).toLocaleString()}.` : 'Done.';
      proposal.hidden = report.cancelled;
      $('#check-proposal-mode', this.root).textContent = PROPOSALS[report.proposal] ?? report.proposal;
      $('#check-apply', this.root).hidden = report.proposal === 'off';
    } else {
      proposal.hidden = true;
    }
  }

  async apply() {
    const { model } = this.api.current();
    if (!model || !this.report?.proposal || this.report.proposal === 'off') return;
    try {
      await this.api.apply(model, this.report.proposal);
      $('#check-status', this.root).textContent = `${model} now gets its tools ${this.report.proposal === 'native' ? 'natively' : 'in text'}.`;
    } catch (err) {
      $('#check-status', this.root).textContent = err?.message ?? String(err);
    }
  }
}
