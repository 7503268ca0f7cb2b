// The one front-end piece of dsh-magics: JupyterLab has no URL that opens a
// terminal tab, only the command `terminal:open {name}`. %bash_terminal shows
// an output of MIME type below; this renderer shows a button that runs the
// command, and runs it once by itself when the output is new.
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { Widget } from '@lumino/widgets';

const MIME = 'application/vnd.dsh-magics.terminal+json';
const OPENED = 'dsh-magics:opened:';
// An output older than this (a reopened notebook) only shows its button.
const FRESH_MS = 120000;

class TerminalOpener extends Widget {
  constructor(commands) {
    super();
    this._commands = commands;
    this.addClass('dsh-magics-terminal');
  }

  renderModel(model) {
    const data = model.data[MIME] || {};
    const name = String(data.name || '');
    const button = document.createElement('button');
    button.className = 'jp-Button jp-mod-styled jp-mod-accept dsh-magics-terminal-open';
    button.textContent = 'Open terminal tab ' + name;
    button.addEventListener('click', () => this._open(name));
    const note = document.createElement('span');
    note.className = 'dsh-magics-terminal-note';
    note.textContent = ' ' + String(data.text || '');
    this.node.replaceChildren(button, note);
    const key = OPENED + String(data.nonce || '');
    const fresh = Math.abs(Date.now() - Number(data.created_ms || 0)) < FRESH_MS;
    if (name && data.nonce && fresh && !window.sessionStorage.getItem(key)) {
      window.sessionStorage.setItem(key, '1');
      this._open(name);
    }
    return Promise.resolve();
  }

  _open(name) {
    return this._commands.execute('terminal:open', { name }).catch(err => {
      console.error('dsh-magics: terminal:open ' + name + ' failed', err);
    });
  }
}

const plugin = {
  id: 'dsh-magics:terminal-tab',
  description: 'Opens a dsh-magics terminal as a JupyterLab terminal tab.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  activate: (app, rendermime) => {
    rendermime.addFactory(
      {
        safe: true,
        mimeTypes: [MIME],
        defaultRank: 10,
        createRenderer: () => new TerminalOpener(app.commands)
      },
      10
    );
  }
};

export default plugin;
