package upstreams

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The posts, users and terms that StartWordPress seeds, drawn from one
// seed so that every start holds the same site.

// Default size and seed of the WordPress site.
const (
	DefaultWordPressPosts = 3000
	DefaultWordPressSeed  = 20261204
)

// FirstPostID is the id of the first seeded post; the others follow it
// without gaps, in seed order.
const FirstPostID = 1001

// WordPressStatuses are the post statuses the seed uses; an administrator
// listing with status=any sees all of them, an anonymous reader only
// publish.
var WordPressStatuses = []string{"publish", "future", "draft", "pending", "private"}

// WordPressCategories and WordPressTags are the seeded terms, in the order
// of WordPress.Categories and WordPress.Tags (which hold their term ids).
// Names hold commas, quotes, an ampersand and non-ASCII text on purpose.
var (
	WordPressCategories = []wpTerm{
		{"News", "news"},
		{"Releases, notes & fixes", "releases"},
		{"Café culture", "cafe"},
		{"Über uns", "ueber-uns"},
		{"中文资讯", "zhongwen"},
		{`Quotes "inside"`, "quotes"},
		{"Emoji 🎉", "emoji"},
		{"Engineering", "engineering"},
	}
	WordPressTags = []wpTerm{
		{"go", "go"},
		{"php", "php"},
		{"mysql", "mysql"},
		{"rest", "rest"},
		{"http", "http"},
		{"json", "json"},
		{"security", "security"},
		{"performance", "performance"},
		{"release", "release"},
		{"rare", "rare"},
		{"ünïcode", "unicode"},
		{"待办", "daiban"},
	}
)

// wordPressTagOdds is each tag's chance, in percent, of being on a post:
// some tags are on a third of the posts, "rare" on about 3%.
var wordPressTagOdds = []int{34, 30, 25, 20, 18, 15, 12, 10, 8, 3, 6, 5}

// wordPressCategoryOdds weighs the first category of a post; a second and
// a third are added to some.
var wordPressCategoryOdds = []int{22, 16, 14, 12, 10, 10, 8, 8}

type wpTerm struct {
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// wpUser is a seeded user; author indexes count the admin as 0 and these
// from 1.
type wpUser struct {
	Login       string `json:"login"`
	Password    string `json:"password"`
	Email       string `json:"email"`
	DisplayName string `json:"display_name"`
	Role        string `json:"role"`
}

var wordPressUsers = []wpUser{
	{"ada", "ada-password-1", "ada@example.com", "Ada Lovelace", "author"},
	{"bruno", "bruno-password-1", "bruno@example.com", "Bruno Müller", "editor"},
	{"chen", "chen-password-1", "chen@example.com", "陈静 (Chén Jìng)", "author"},
}

// wpPost is one seeded post; Author, Categories and Tags are indexes
// (author 0 is the admin).
type wpPost struct {
	Title      string `json:"title"`
	Status     string `json:"status"`
	Author     int    `json:"author"`
	Date       string `json:"date"`
	Modified   string `json:"modified"`
	Categories []int  `json:"categories"`
	Tags       []int  `json:"tags"`
}

// wpSeed is what interop/wordpress/install.php reads.
type wpSeed struct {
	Admin       wpUser   `json:"admin"`
	Users       []wpUser `json:"users"`
	Categories  []wpTerm `json:"categories"`
	Tags        []wpTerm `json:"tags"`
	FirstPostID int      `json:"first_post_id"`
	Posts       []wpPost `json:"posts"`
}

// wordPressTitleWords go into titles: commas and quotes come from the
// layouts, the rest from here.
var wordPressTitleWords = []string{
	"café", "über", "naïve", "中文", "测试", "🎉", "🚀", "O'Brien", "Zoë", "façade",
	"release", "notes", "draft", "ideas", "weekly", "digest", "plan", "review",
}

var wordPressTitleLayouts = []string{
	"%s, %s and %s #%d",
	`"%s", %s meets %s #%d`,
	"%s — %s, %s (%d)",
	"Why %s? %s, %s, again #%d",
	"%s & %s: “%s” #%d",
}

// seedWordPress draws the site: posts FirstPostID.. in order, about 62%
// published, 15% drafts, 8% pending, 8% private and 7% scheduled, each in
// one to three categories and with zero to several tags.
func seedWordPress(posts int, seed uint64) wpSeed {
	rng := rand.New(rand.NewPCG(seed, 7))
	word := func() string { return wordPressTitleWords[rng.IntN(len(wordPressTitleWords))] }
	past := time.Date(2024, 1, 1, 8, 0, 0, 0, time.UTC)
	future := time.Date(2031, 1, 1, 8, 0, 0, 0, time.UTC)
	const layout = "2006-01-02 15:04:05"
	s := wpSeed{
		Admin:       wpUser{Login: WordPressAdmin, Password: "admin-password-1", Email: "admin@example.com", DisplayName: "Site Admin", Role: "administrator"},
		Users:       wordPressUsers,
		Categories:  WordPressCategories,
		Tags:        WordPressTags,
		FirstPostID: FirstPostID,
	}
	for i := range posts {
		p := wpPost{Status: "publish", Author: rng.IntN(len(wordPressUsers) + 1)}
		switch x := rng.IntN(100); {
		case x < 15:
			p.Status = "draft"
		case x < 23:
			p.Status = "pending"
		case x < 31:
			p.Status = "private"
		case x < 38:
			p.Status = "future"
		}
		p.Title = fmt.Sprintf(wordPressTitleLayouts[rng.IntN(len(wordPressTitleLayouts))], word(), word(), word(), FirstPostID+i)
		date := past.Add(time.Duration(i) * 3 * time.Hour)
		if p.Status == "future" {
			date = future.Add(time.Duration(i) * 3 * time.Hour)
		}
		p.Date = date.Format(layout)
		p.Modified = date.Add(time.Duration(i%17) * time.Hour).Format(layout)
		p.Categories = []int{weighted(rng, wordPressCategoryOdds)}
		for extra := rng.IntN(100); extra < 45 && len(p.Categories) < 3; extra = rng.IntN(100) {
			if c := rng.IntN(len(WordPressCategories)); !slices.Contains(p.Categories, c) {
				p.Categories = append(p.Categories, c)
			}
		}
		p.Tags = []int{}
		for tag, odds := range wordPressTagOdds {
			if rng.IntN(100) < odds {
				p.Tags = append(p.Tags, tag)
			}
		}
		s.Posts = append(s.Posts, p)
	}
	return s
}

// weighted draws an index with the given relative weights.
func weighted(rng *rand.Rand, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	x := rng.IntN(total)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}
