// Package upstream reads the HTTP APIs a configuration describes: clients
// with their credentials, retries and rate limits, the pagination dialects,
// and the scan engine that says exactly how much of a requested scope it
// covered and why not; also reads by id and judgments of upstream answers.
//
// It must never read a credential from anything but the configuration's env
// var or file, never follow a continuation to another host, and never report
// a scan as complete when any part of the scope went unread.
package upstream
