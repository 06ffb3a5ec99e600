<?php
/*
 * The router of `php -S` for airlock's interop tests: it serves Debian's
 * WordPress (/usr/share/wordpress) configured by the wp-config.php that
 * AIRLOCK_WP_CONFIG names (written by interop/upstreams/wordpress.go in
 * the test's temp dir), never by Debian's /etc/wordpress.
 *
 *     AIRLOCK_WP_CONFIG=/tmp/…/wp-config.php php -S 127.0.0.1:N router.php
 *
 * Debian's own /usr/share/wordpress/wp-config.php looks for
 * /etc/wordpress/config-<host>.php; wp-load.php would load it. This router
 * does what index.php and wp-blog-header.php do without wp-load.php: it
 * loads our wp-config.php (which requires wp-settings.php), then wp(). The
 * REST API (/wp-json/…, pretty permalinks) answers and exits inside wp();
 * there is no theme, so anything else is a 404.
 */

$config = getenv('AIRLOCK_WP_CONFIG');
if ($config === false || !is_file($config)) {
	http_response_code(500);
	header('Content-Type: text/plain');
	echo "AIRLOCK_WP_CONFIG does not name a wp-config.php\n";
	return true;
}

// What Apache with mod_rewrite shows WordPress: every request ran
// index.php.
$_SERVER['SCRIPT_NAME'] = '/index.php';
$_SERVER['PHP_SELF'] = '/index.php';
$_SERVER['SCRIPT_FILENAME'] = '/usr/share/wordpress/index.php';

define('WP_USE_THEMES', false);
$wp_did_header = true;
require $config;
wp();

status_header(404);
header('Content-Type: text/plain; charset=utf-8');
echo "not served by the interop router: only the REST API is\n";
