<?php
/*
 * Installs WordPress and seeds it, for airlock's interop tests:
 *
 *     AIRLOCK_WP_CONFIG=/tmp/…/wp-config.php php install.php SEED.json
 *
 * The wp-config.php names an empty database of the test's own (see
 * interop/upstreams/wordpress.go). This script runs wp_install as the web
 * installer does (the admin user, the default options and roles), switches
 * to pretty permalinks so that the REST API answers at /wp-json/, creates
 * the users, categories and tags of SEED.json with WordPress's own
 * functions, creates an application password for the admin, and inserts
 * the posts with multi-row SQL (not wp_insert_post, which runs every hook
 * and a dozen queries per post) before WordPress recounts its terms.
 * It prints what the harness needs as one JSON object on stdout.
 *
 * Nothing here sends mail or HTTP: wp_install would mail the admin and
 * probe its own permalinks over HTTP.
 */

$config = getenv('AIRLOCK_WP_CONFIG');
if ($config === false || !is_file($config) || count($argv) !== 2) {
	fwrite(STDERR, "usage: AIRLOCK_WP_CONFIG=wp-config.php php install.php SEED.json\n");
	exit(2);
}
$seed = json_decode(file_get_contents($argv[1]), true, 16, JSON_THROW_ON_ERROR);

define('WP_INSTALLING', true);
require $config;

// No mail, no HTTP (the permalink probe, update checks), no .htaccess.
add_filter('pre_wp_mail', '__return_false');
add_filter('pre_http_request', function () {
	return new WP_Error('airlock_offline', 'the interop install sends no HTTP');
});
add_filter('got_rewrite', '__return_false');

require_once ABSPATH . 'wp-admin/includes/upgrade.php';

function fail($what, $err) {
	$msg = is_wp_error($err) ? $err->get_error_message() : var_export($err, true);
	fwrite(STDERR, "$what: $msg\n");
	exit(1);
}

$admin = $seed['admin'];
$installed = wp_install('airlock interop', $admin['login'], $admin['email'], true, '', wp_slash($admin['password']));
if (empty($installed['user_id'])) {
	fail('wp_install', $installed);
}
$admin_id = (int) $installed['user_id'];
wp_update_user(array('ID' => $admin_id, 'display_name' => $admin['display_name']));

// The REST API at /wp-json/ needs pretty permalinks; the rules are kept in
// the rewrite_rules option (no .htaccess: php -S routes every request).
global $wp_rewrite;
$wp_rewrite->set_permalink_structure('/%postname%/');
$wp_rewrite->flush_rules(false);

// wp_install's sample content: the seeded posts are the only posts.
wp_delete_post(1, true);

$user_ids = array($admin_id);
foreach ($seed['users'] as $u) {
	$id = wp_insert_user(array(
		'user_login' => $u['login'], 'user_email' => $u['email'], 'user_pass' => $u['password'],
		'display_name' => $u['display_name'], 'role' => $u['role'],
	));
	if (is_wp_error($id)) {
		fail('wp_insert_user ' . $u['login'], $id);
	}
	$user_ids[] = (int) $id;
}

function insert_terms($terms, $taxonomy) {
	$out = array();
	foreach ($terms as $term) {
		$r = wp_insert_term($term['name'], $taxonomy, array('slug' => $term['slug']));
		if (is_wp_error($r)) {
			fail("wp_insert_term $taxonomy " . $term['slug'], $r);
		}
		$out[] = array('term_id' => (int) $r['term_id'], 'tt_id' => (int) $r['term_taxonomy_id']);
	}
	return $out;
}
$categories = insert_terms($seed['categories'], 'category');
$tags = insert_terms($seed['tags'], 'post_tag');

$app = WP_Application_Passwords::create_new_application_password($admin_id, array('name' => 'airlock interop'));
if (is_wp_error($app)) {
	fail('create_new_application_password', $app);
}

global $wpdb;
$wpdb->query('START TRANSACTION');
$post_ids = array();
foreach (array_chunk($seed['posts'], 500, true) as $chunk) {
	$rows = array();
	$rels = array();
	foreach ($chunk as $i => $p) {
		$id = (int) $seed['first_post_id'] + $i;
		$post_ids[] = $id;
		$date = $p['date'];
		$modified = $p['modified'];
		// The site's timezone is UTC: local and GMT dates are the same.
		$rows[] = $wpdb->prepare(
			'(%d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %s, %d, %s, %s, %d)',
			$id, $user_ids[$p['author']], $date, $date, 'Seeded post ' . $id . '.', $p['title'], '', $p['status'],
			'closed', 'closed', '', 'seeded-post-' . $id, '', '', $modified, $modified, '', 0,
			'http://airlock.invalid/?p=' . $id, 0, 'post', '', 0
		);
		foreach ($p['categories'] as $c) {
			$rels[] = $wpdb->prepare('(%d, %d, 0)', $id, $categories[$c]['tt_id']);
		}
		foreach ($p['tags'] as $t) {
			$rels[] = $wpdb->prepare('(%d, %d, 0)', $id, $tags[$t]['tt_id']);
		}
	}
	$ok = $wpdb->query("INSERT INTO $wpdb->posts (ID, post_author, post_date, post_date_gmt, post_content, post_title,
		post_excerpt, post_status, comment_status, ping_status, post_password, post_name, to_ping, pinged,
		post_modified, post_modified_gmt, post_content_filtered, post_parent, guid, menu_order, post_type,
		post_mime_type, comment_count) VALUES " . implode(",\n", $rows));
	if ($ok === false) {
		fail('insert posts', $wpdb->last_error);
	}
	if ($rels && $wpdb->query("INSERT INTO $wpdb->term_relationships (object_id, term_taxonomy_id, term_order) VALUES " . implode(",\n", $rels)) === false) {
		fail('insert term relationships', $wpdb->last_error);
	}
}
$wpdb->query('COMMIT');

// The counts WordPress keeps beside each term (published posts only).
wp_update_term_count_now(array_column($categories, 'tt_id'), 'category');
wp_update_term_count_now(array_column($tags, 'tt_id'), 'post_tag');

echo json_encode(array(
	'admin_id' => $admin_id,
	'user_ids' => $user_ids,
	'categories' => array_column($categories, 'term_id'),
	'tags' => array_column($tags, 'term_id'),
	'app_password' => $app[0],
	'posts' => count($post_ids),
	'wordpress' => get_bloginfo('version'),
)), "\n";
