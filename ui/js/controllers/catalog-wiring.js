// The catalog wired to the app: its buttons (the sidebar's Get servers, the servers list's), the
// engine's calls, bundles opened with the app (its command line, another launch, a drop on the
// window), and the servers list's update notices (asked when that list opens).
import * as ipc from '../ipc.js';
import { $ } from '../dom.js';
import { CatalogView } from '../views/catalog.js';

/**
 * deps: { serversView, reloadServerConfig(), openLink(url), toast(text), showBanner(title, detail) }.
 * Returns { openUpdate(server), watch() } (watch: starts listening for bundles opened with the app).
 */
export function wireCatalog({ serversView, reloadServerConfig, openLink, toast, showBanner }) {
  const view = new CatalogView($('#catalog-dialog'), {
    search: (term, cursor) => ipc.catalogSearch(term, cursor),
    icon: (url) => ipc.catalogIcon(url),
    prepare: (name) => ipc.catalogPrepare(name),
    prepareUpdate: (server) => ipc.catalogPrepareUpdate(server),
    preview: (token, choices) => ipc.catalogPreview(token, choices),
    install: (token, choices) => ipc.catalogInstall(token, choices),
    cancel: (token) => ipc.catalogCancel(token),
    start: async (name) => {
      await ipc.setMcpServerEnabled(name, true).catch((err) => showBanner(`Could not start “${name}”.`, err?.message ?? String(err)));
      await reloadServerConfig();
    },
    pickBundle: () => ipc.pickBundle(),
    pickPath: (folder) => ipc.pickSettingPath(folder),
    setRegistry: (url) => ipc.setCatalogRegistry(url),
    openLink,
    toast,
    installed: async () => {
      view.changed();
      await reloadServerConfig();
      checkUpdates();
    },
  });
  const checkUpdates = () => ipc.catalogUpdates().then((u) => serversView.setUpdates(u)).catch(() => {});
  $('#catalog-button').addEventListener('click', () => view.open());
  $('#server-catalog').addEventListener('click', () => view.open());
  // the servers list says which have a newer version in their registry
  $('#servers-button').addEventListener('click', checkUpdates);
  return {
    openUpdate: (server) => view.openUpdate(server),
    watch: () => ipc.watchBundles((open) => {
      if (open.kind === 'prepared') view.showPrepared(open.prepared);
      else showBanner(`“${open.file}” cannot be installed.`, open.message);
    }),
  };
}
