"use strict";
// Loaded with `node -r` before a published server that listens on a port alone (all
// interfaces): it listens on 127.0.0.1 only, as every server the tests start does.
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if ((typeof port === "number" || /^\d+$/.test(String(port))) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
