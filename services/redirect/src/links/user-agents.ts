/**
 * Who asked for a link, as far as the user agent tells: a link-preview fetcher (crawler or
 * unfurler), which gets a preview page and counts nothing; an iPhone, iPad or iPod, which may get
 * the iOS fallback; or anyone else.
 */
export type ClientKind = 'previewer' | 'ios' | 'other';

/**
 * Fetchers that read a link to show a preview card or index it, never a person tapping it. Each
 * name is what the fetcher's documented user agent contains, chosen so that no browser or in-app
 * web view of a person matches (Telegram's and Discord's in-app browsers say `Telegram-Android`
 * or `Discord`, not `TelegramBot` or `Discordbot`; Pinterest's app says `Pinterest for iOS`, its
 * fetchers `Pinterestbot` and `Pinterest/0.x`):
 * - the spec's: facebookexternalhit and Facebot (Facebook, Instagram, Messenger, Threads; iMessage
 *   previews also send these), Twitterbot (X), Slackbot (and Slackbot-LinkExpanding),
 *   LinkedInBot, WhatsApp (Signal's previews send it too), TelegramBot, Discordbot, Googlebot,
 *   bingbot, Applebot;
 * - the unfurlers of other places links are shared: Pinterest, redditbot, Embedly (embeds in many
 *   sites and apps), SkypeUriPreview (Skype and Microsoft Teams), vkShare (VK), Iframely
 *   (embeds, e.g. in Notion), Mastodon (every server fetches a card for each post's link),
 *   Bluesky's Cardyb, Snapchat's "Snap URL Preview Service".
 */
const PREVIEWER =
  /facebookexternalhit|facebot|twitterbot|slackbot|linkedinbot|whatsapp|telegrambot|discordbot|googlebot|bingbot|applebot|pinterestbot|pinterest\/0\.|redditbot|embedly|skypeuripreview|vkshare|iframely|mastodon\/|cardyb|snap url preview service/i;

const IOS_DEVICE = /iphone|ipad|ipod/i;

/**
 * Previewers first: some send a device in their user agent too, and a preview must never count.
 * iPadOS Safari in its default desktop mode sends a Mac user agent and cannot be told apart; it
 * is `other` and gets the web fallback.
 */
export function clientOf(userAgent: string | undefined): ClientKind {
  if (userAgent === undefined || userAgent === '') return 'other';
  if (PREVIEWER.test(userAgent)) return 'previewer';
  return IOS_DEVICE.test(userAgent) ? 'ios' : 'other';
}
