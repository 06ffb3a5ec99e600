// Package upstream is the scan engine and the runtime it runs on:
// Initialize builds the clients, resources and actions of a configuration
// with every default resolved; a Scan reads a resource's sources page by
// page (in order, or concurrently where a total lets it plan), decodes,
// normalizes and checks each item against every filter and the contract,
// and says exactly how much of the requested scope it covered and why not.
//
// It stands on upstream/contract (what items are held to), upstream/dialect
// (a list's requests and the reading of its pages) and upstream/transport
// (the HTTP client and its credentials); upstream/read (reads by id,
// judgments of an answer) stands on it. It must never read a credential
// from anything but the configuration's env var or file, never follow a
// continuation to another host, and never report a scan as complete when
// any part of the scope went unread.
package upstream
